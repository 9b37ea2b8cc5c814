/**
 * URL safety for URL ingest (spec 2.2: "http or https; localhost and private addresses are blocked").
 *
 * A source URL is fetchable when it is http(s), carries no credentials and every address its host
 * resolves to is public unicast. Origins listed in the allowlist (INGEST_URL_ALLOWLIST: test fixture
 * servers) skip the address-class check, for that exact origin only.
 *
 * The same check runs at submission time (assertFetchableUrl, a 400 for the caller) and again for every
 * hop when the source is fetched (safe-fetch.ts), which also connects to the addresses checked here.
 */
import dns from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';
import { AppError } from '../errors.ts';

/** `allowlist`: exact origins (scheme://host[:port]) that may be fetched even when local or private. */
export type UrlPolicy = { allowlist: string[] };

export type LookupFn = (hostname: string) => Promise<{ address: string; family: 4 | 6 }[]>;

export type ResolvedAddress = { address: string; family: 4 | 6 };

export const MAX_SOURCE_URL_LENGTH = 2048;

/** How long a host name lookup may take before the URL is refused as unresolvable. */
export const DEFAULT_LOOKUP_TIMEOUT_MS = 10_000;

/** The system resolver (getaddrinfo, so /etc/hosts applies), every address, in resolver order. */
export const systemLookup: LookupFn = async (hostname) => {
  const found = await dns.promises.lookup(hostname, { all: true, order: 'verbatim' });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export type UrlRefusalKind = 'bad_url' | 'blocked_address' | 'unresolvable';

/**
 * Why a URL or one of its hops may not be fetched. `publicMessage` is safe to show to the submitter: it
 * names the refused class of address, never the resolved address itself.
 */
export class UrlRefusal extends Error {
  readonly kind: UrlRefusalKind;
  readonly publicMessage: string;
  /** The refused address class (classifyAddress range) for `blocked_address`. */
  readonly range: string | undefined;
  /** The resolver's error code for `unresolvable` (ENOTFOUND, EAI_AGAIN, ETIMEOUT, ...). */
  readonly lookupCode: string | undefined;
  constructor(
    kind: UrlRefusalKind,
    publicMessage: string,
    details: { range?: string; lookupCode?: string; cause?: unknown } = {},
  ) {
    super(publicMessage, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'UrlRefusal';
    this.kind = kind;
    this.publicMessage = publicMessage;
    this.range = details.range;
    this.lookupCode = details.lookupCode;
  }
}

const toAppError = (refusal: UrlRefusal) =>
  new AppError(400, 'invalid_ingest_request', refusal.publicMessage);

/** Reasons a parsed URL may not be used at all, whatever its host resolves to; null when it may. */
export function urlShapeProblem(url: URL): string | null {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    return `The URL scheme "${url.protocol.replace(/:$/, '')}" is not supported; only http and https URLs can be ingested.`;
  }
  if (url.username !== '' || url.password !== '') {
    return 'URLs with credentials (user:password@) are not accepted.';
  }
  if (url.hostname === '') return 'The URL has no host.';
  if (url.href.length > MAX_SOURCE_URL_LENGTH) {
    return `The URL is longer than ${MAX_SOURCE_URL_LENGTH} characters.`;
  }
  return null;
}

/**
 * Parses a submitted source URL. WHATWG parsing normalises host spellings (127.1, 0x7f.1, 2130706433,
 * 0177.0.0.1 all become 127.0.0.1), so later checks see one canonical form.
 */
export function parseSourceUrl(raw: string): URL {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new AppError(400, 'invalid_ingest_request', 'The URL is empty.');
  }
  if (raw.length > MAX_SOURCE_URL_LENGTH) {
    throw new AppError(
      400,
      'invalid_ingest_request',
      `The URL is longer than ${MAX_SOURCE_URL_LENGTH} characters.`,
    );
  }
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    throw new AppError(400, 'invalid_ingest_request', 'The URL is not a valid absolute http or https URL.');
  }
  const problem = urlShapeProblem(url);
  if (problem) throw new AppError(400, 'invalid_ingest_request', problem);
  return url;
}

function normaliseOrigin(entry: string): string | null {
  try {
    return new URL(entry).origin;
  } catch {
    return null; // not an origin: it can never match (config validation reports such entries)
  }
}

/** True when url.origin is exactly one of the allowlisted origins (scheme, host and port all equal). */
export function isAllowlisted(url: URL, policy: UrlPolicy): boolean {
  const origin = url.origin;
  if (origin === 'null') return false;
  return policy.allowlist.some((entry) => entry === origin || normaliseOrigin(entry) === origin);
}

/** The host of a URL without IPv6 brackets, lower case, without a trailing dot. */
export function hostOf(url: URL): string {
  let host = url.hostname.toLowerCase();
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return host.replace(/\.$/, '');
}

// Global unicast IPv6 space (RFC 4291 / IANA): everything outside 2000::/3 is special or unassigned.
const IPV6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

/**
 * The address in a form ipaddr.js reads correctly: IPv4 as given (net.isIP accepts dotted quads only),
 * IPv6 serialised by the WHATWG URL parser (all hex, zone id dropped). ipaddr.js reads a dotted tail
 * such as ::127.0.0.1 (IPv4-compatible, really ::7f00:1) as if it were ::ffff:127.0.0.1, so dotted
 * tails must never reach it; getaddrinfo/inet_ntop prints compatible addresses in exactly that form.
 */
function canonicalIp(text: string): string | null {
  const family = net.isIP(text);
  if (family === 4) return text;
  if (family !== 6) return null;
  const withoutZone = text.split('%')[0] ?? '';
  try {
    const host = new URL(`http://[${withoutZone}]/`).hostname;
    return host.slice(1, -1);
  } catch {
    return null; // net.isIP accepted it but the URL parser does not: refuse rather than guess
  }
}

/**
 * Classifies one IP address. `ok` only for public unicast: ipaddr.js's range() must say 'unicast' (so
 * loopback, private, linkLocal, carrierGradeNat, uniqueLocal, multicast, unspecified, broadcast,
 * reserved, benchmarking, NAT64 'rfc6052', '6to4', 'teredo', ... are refused). IPv4-mapped IPv6
 * addresses are classified as the IPv4 address they carry; IPv4-compatible (::a.b.c.d) and any IPv6
 * address outside 2000::/3 are refused too. Anything that is not an IP address is refused as 'invalid'.
 */
export function classifyAddress(ip: string): { ok: boolean; range: string } {
  let text = typeof ip === 'string' ? ip.trim() : '';
  if (text.startsWith('[') && text.endsWith(']')) text = text.slice(1, -1);
  const canonical = canonicalIp(text);
  if (canonical === null) return { ok: false, range: 'invalid' };
  let addr: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    addr = ipaddr.process(canonical);
  } catch {
    return { ok: false, range: 'invalid' }; // net accepted it but ipaddr.js cannot: refuse, never guess
  }
  const range = addr.range();
  if (range !== 'unicast') return { ok: false, range };
  if (addr.kind() === 'ipv6') {
    const v6 = addr as ipaddr.IPv6;
    if (v6.parts.slice(0, 6).every((p) => p === 0)) return { ok: false, range: 'ipv4Compatible' };
    if (!v6.match(IPV6_GLOBAL_UNICAST)) return { ok: false, range: 'reserved' };
  }
  return { ok: true, range };
}

const RANGE_LABELS: Record<string, string> = {
  loopback: 'loopback',
  private: 'private network',
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  uniqueLocal: 'unique local (private IPv6)',
  multicast: 'multicast',
  unspecified: 'unspecified',
  broadcast: 'broadcast',
  reserved: 'reserved',
  benchmarking: 'reserved (benchmarking)',
  ipv4Compatible: 'IPv4-compatible IPv6',
  rfc6052: 'NAT64 (IPv4-embedded IPv6)',
  rfc6145: 'IPv4-translated IPv6',
  '6to4': '6to4 (IPv4-embedded IPv6)',
  teredo: 'Teredo (IPv4-embedded IPv6)',
  invalid: 'invalid',
};

/** A human label for a refused range, for messages. */
export function describeRange(range: string): string {
  return RANGE_LABELS[range] ?? 'special-purpose';
}

function isLocalhostName(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost');
}

function withTimeout<T>(promise: Promise<T>, ms: number, signal: AbortSignal | undefined): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => {
      cleanup();
      reject(signal?.reason ?? new Error('aborted'));
    };
    const timer = setTimeout(() => {
      cleanup();
      reject(Object.assign(new Error('lookup timed out'), { code: 'ETIMEOUT' }));
    }, ms);
    const cleanup = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
    };
    if (signal?.aborted) {
      onAbort();
      return;
    }
    signal?.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        cleanup();
        resolve(v);
      },
      (e: unknown) => {
        cleanup();
        reject(e);
      },
    );
  });
}

/**
 * Resolves the URL's host exactly once. IP literals are not looked up; `localhost` and `*.localhost`
 * are loopback by definition (RFC 6761) and are never sent to a resolver.
 */
async function resolveHost(
  host: string,
  lookup: LookupFn,
  opts: { timeoutMs?: number; signal?: AbortSignal },
): Promise<ResolvedAddress[]> {
  const family = net.isIP(host);
  if (family === 4 || family === 6) return [{ address: host, family }];
  if (isLocalhostName(host)) {
    return [
      { address: '127.0.0.1', family: 4 },
      { address: '::1', family: 6 },
    ];
  }
  let found: { address: string; family: 4 | 6 }[];
  try {
    found = await withTimeout(lookup(host), opts.timeoutMs ?? DEFAULT_LOOKUP_TIMEOUT_MS, opts.signal);
  } catch (err) {
    if (opts.signal?.aborted) throw err;
    const code = typeof (err as { code?: unknown })?.code === 'string' ? (err as { code: string }).code : 'EUNKNOWN';
    throw new UrlRefusal('unresolvable', 'The URL host name could not be resolved.', {
      lookupCode: code,
      cause: err,
    });
  }
  if (!Array.isArray(found) || found.length === 0) {
    throw new UrlRefusal('unresolvable', 'The URL host name could not be resolved.', { lookupCode: 'ENODATA' });
  }
  return found.map((a) => ({ address: a.address, family: net.isIP(a.address) === 6 ? 6 : 4 }));
}

/**
 * The one check both submission and fetching use: shape, a single resolution, then every resolved
 * address must be public unless url.origin is allowlisted. Returns the checked addresses, which are
 * the only ones a fetch may connect to. Throws UrlRefusal.
 */
export async function checkFetchTarget(
  url: URL,
  policy: UrlPolicy,
  lookup: LookupFn = systemLookup,
  opts: { timeoutMs?: number; signal?: AbortSignal } = {},
): Promise<{ addresses: ResolvedAddress[]; allowlisted: boolean }> {
  const problem = urlShapeProblem(url);
  if (problem) throw new UrlRefusal('bad_url', problem);
  const allowlisted = isAllowlisted(url, policy);
  const addresses = await resolveHost(hostOf(url), lookup, opts);
  for (const { address } of addresses) {
    if (net.isIP(address) === 0) {
      throw new UrlRefusal('unresolvable', 'The URL host name could not be resolved.', { lookupCode: 'EBADRESP' });
    }
  }
  if (!allowlisted) {
    for (const { address } of addresses) {
      const { ok, range } = classifyAddress(address);
      if (!ok) {
        throw new UrlRefusal(
          'blocked_address',
          `The URL cannot be fetched: its host resolves to a ${describeRange(range)} address; only public internet addresses are allowed.`,
          { range },
        );
      }
    }
  }
  return { addresses, allowlisted };
}

/**
 * Submission-time check: resolves the host (IP literals are not looked up), refuses any non-public
 * address unless url.origin is allowlisted. Throws AppError(400, 'invalid_ingest_request').
 */
export async function assertFetchableUrl(
  url: URL,
  policy: UrlPolicy,
  lookup?: LookupFn,
): Promise<{ addresses: string[] }> {
  try {
    const { addresses } = await checkFetchTarget(url, policy, lookup ?? systemLookup);
    return { addresses: addresses.map((a) => a.address) };
  } catch (err) {
    if (err instanceof UrlRefusal) throw toAppError(err);
    throw err;
  }
}
