/**
 * Fetching a URL-ingest source without server-side request forgery.
 *
 * - http and https only, no credentials in URLs (url-safety.ts);
 * - each hop's host is resolved exactly once by our code, every resolved address is checked
 *   (url-safety.ts), and the socket connects only to those checked addresses: the undici Agent of the
 *   hop gets a `connect.lookup` that answers from the checked list and never asks a resolver, so a
 *   DNS-rebinding second answer is never used. Host header and TLS servername stay the host name;
 * - redirects are followed by hand (redirect: 'manual'); each Location is resolved against the current
 *   URL and checked again before anything connects to it; at most maxRedirects (default 5) hops;
 * - the body is streamed and refused once it passes maxBytes; one deadline (timeoutMs) covers lookups,
 *   connects, every hop and the body.
 *
 * Allowlisted origins (INGEST_URL_ALLOWLIST) skip the address-class check for that exact origin only;
 * a redirect from there to any other origin is checked like any other URL.
 */
import type dns from 'node:dns';
import type net from 'node:net';
import { Agent, fetch } from 'undici';
import {
  checkFetchTarget,
  hostOf,
  urlShapeProblem,
  UrlRefusal,
  parseSourceUrl,
  type LookupFn,
  type ResolvedAddress,
  type UrlPolicy,
} from './url-safety.ts';
import { AppError } from '../errors.ts';

export type SafeFetchOptions = {
  policy: UrlPolicy;
  maxBytes: number;
  timeoutMs: number;
  maxRedirects?: number;
  lookup?: LookupFn;
  userAgent?: string;
};

export type SafeFetchResult = {
  /** The URL whose response is returned (after redirects). */
  finalUrl: string;
  status: number;
  contentType: string | null;
  bytes: Buffer;
  /** Every URL a redirect led to, in order (the first URL is not included; the last one is finalUrl). */
  redirects: string[];
  /** True when the final host name differs from the first one. */
  crossSiteRedirect: boolean;
};

export type FetchRefusalReason =
  | 'blocked_address'
  | 'bad_url'
  | 'too_many_redirects'
  | 'too_large'
  | 'timeout'
  | 'http_status'
  | 'network';

export const DEFAULT_MAX_REDIRECTS = 5;
export const DEFAULT_MAX_BYTES = 50_000_000;
export const DEFAULT_USER_AGENT = 'CairnIngest/1.0';

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

/**
 * A fetch that was refused or failed. `publicMessage` is safe to show to the account (job failure
 * message): it never contains resolved addresses or low-level error text; the cause keeps those for
 * logs.
 */
export class FetchRefusedError extends Error {
  readonly reason: FetchRefusalReason;
  readonly publicMessage: string;
  readonly retryable: boolean;
  /** The HTTP status for reason 'http_status'; null otherwise. */
  readonly status: number | null;
  constructor(
    reason: FetchRefusalReason,
    publicMessage: string,
    retryable: boolean,
    details: { status?: number; cause?: unknown } = {},
  ) {
    super(publicMessage, details.cause === undefined ? undefined : { cause: details.cause });
    this.name = 'FetchRefusedError';
    this.reason = reason;
    this.publicMessage = publicMessage;
    this.retryable = retryable;
    this.status = details.status ?? null;
  }
}

function fromRefusal(refusal: UrlRefusal): FetchRefusedError {
  switch (refusal.kind) {
    case 'bad_url':
      return new FetchRefusedError('bad_url', refusal.publicMessage, false, { cause: refusal });
    case 'blocked_address':
      return new FetchRefusedError('blocked_address', refusal.publicMessage, false, { cause: refusal });
    case 'unresolvable': {
      // A name that does not exist will not start existing on a retry; a resolver hiccup may pass.
      const permanent = refusal.lookupCode === 'ENOTFOUND' || refusal.lookupCode === 'ENODATA';
      return new FetchRefusedError('network', refusal.publicMessage, !permanent, { cause: refusal });
    }
  }
}

/**
 * A `lookup` for net/tls.connect that answers only from the addresses already checked for this hop,
 * and only for this hop's host: the connection can go nowhere else, and no second DNS query happens.
 */
function pinnedLookup(expectedHost: string, addresses: ResolvedAddress[]): net.LookupFunction {
  return (hostname, options: dns.LookupOptions, callback) => {
    const host = hostname.toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
    const family = options.family === 4 || options.family === 'IPv4' ? 4 : options.family === 6 || options.family === 'IPv6' ? 6 : 0;
    const usable = addresses.filter((a) => family === 0 || a.family === family);
    if (host !== expectedHost || usable.length === 0) {
      const err: NodeJS.ErrnoException = new Error(`no checked address for ${hostname}`);
      err.code = 'ENOTFOUND';
      callback(err, '', undefined);
      return;
    }
    if (options.all) {
      callback(null, usable.map((a) => ({ address: a.address, family: a.family })));
      return;
    }
    const first = usable[0]!;
    callback(null, first.address, first.family);
  };
}

function refusedForStatus(status: number): FetchRefusedError {
  const retryable = status >= 500 || status === 429;
  return new FetchRefusedError(
    'http_status',
    `The source answered with HTTP status ${status}.`,
    retryable,
    { status },
  );
}

const tooLarge = (maxBytes: number) =>
  new FetchRefusedError('too_large', `The source is larger than ${maxBytes} bytes.`, false);

type BodyStream = { getReader(): ReadableStreamDefaultReader<Uint8Array> };

async function readLimited(body: BodyStream | null, maxBytes: number): Promise<Buffer> {
  if (!body) return Buffer.alloc(0);
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > maxBytes) {
      await reader.cancel().catch(() => {
        // the stream may already be errored; the size refusal is what matters
      });
      throw tooLarge(maxBytes);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks, total);
}

function toUrl(input: string | URL): URL {
  if (input instanceof URL) {
    const problem = urlShapeProblem(input);
    if (problem) throw new FetchRefusedError('bad_url', problem, false);
    return new URL(input.href);
  }
  try {
    return parseSourceUrl(input);
  } catch (err) {
    if (err instanceof AppError) throw new FetchRefusedError('bad_url', err.message, false, { cause: err });
    throw err;
  }
}

/** One safeFetch call: its options, the deadline's signal, the agents to close at the end. */
type FetchRun = {
  opts: SafeFetchOptions;
  signal: AbortSignal;
  agents: Agent[];
  /** The refusal for a deadline that passed during the step that failed with `cause`. */
  timeout: (cause?: unknown) => FetchRefusedError;
};

type HopResponse = Awaited<ReturnType<typeof fetch>>;

/**
 * GET a source URL safely. Resolves with the final 2xx response's body; rejects with FetchRefusedError
 * for everything else (see FetchRefusalReason).
 */
export async function safeFetch(url: string | URL, opts: SafeFetchOptions): Promise<SafeFetchResult> {
  const maxRedirects = opts.maxRedirects ?? DEFAULT_MAX_REDIRECTS;
  const first = toUrl(url);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(new Error('safeFetch deadline')), opts.timeoutMs);
  const run: FetchRun = {
    opts,
    signal: controller.signal,
    agents: [],
    timeout: (cause?: unknown) =>
      new FetchRefusedError(
        'timeout',
        `The source did not answer within ${Math.round(opts.timeoutMs / 1000) || 1} s.`,
        true,
        { cause },
      ),
  };

  try {
    let current = first;
    const redirects: string[] = [];
    for (;;) {
      const response = await fetchHop(current, run);
      const location = response.headers.get('location');
      if (REDIRECT_STATUSES.has(response.status) && location !== null) {
        await response.body?.cancel().catch(() => {
          // the redirect body is not needed; a failed cancel changes nothing
        });
        current = redirectTarget(location, current, redirects.length, maxRedirects);
        redirects.push(current.href);
        continue;
      }
      const bytes = await readResponse(response, run);
      return {
        finalUrl: current.href,
        status: response.status,
        contentType: response.headers.get('content-type'),
        bytes,
        redirects,
        crossSiteRedirect: hostOf(current) !== hostOf(first),
      };
    }
  } finally {
    clearTimeout(timer);
    await Promise.allSettled(run.agents.map((a) => a.destroy()));
  }
}

/** Checks one hop's URL and GETs it over a connection that can reach only the checked addresses. */
async function fetchHop(current: URL, run: FetchRun): Promise<HopResponse> {
  const { opts, signal } = run;
  let target: { addresses: ResolvedAddress[] };
  try {
    target = await checkFetchTarget(current, opts.policy, opts.lookup, {
      timeoutMs: opts.timeoutMs,
      signal,
    });
  } catch (err) {
    if (err instanceof UrlRefusal) throw fromRefusal(err);
    if (signal.aborted) throw run.timeout(err);
    throw err;
  }

  const agent = new Agent({
    connect: { lookup: pinnedLookup(hostOf(current), target.addresses) },
    connections: 1,
    pipelining: 1,
  });
  run.agents.push(agent);

  try {
    return await fetch(current.href, {
      method: 'GET',
      redirect: 'manual',
      dispatcher: agent,
      signal,
      headers: {
        'user-agent': opts.userAgent ?? DEFAULT_USER_AGENT,
        accept: '*/*',
      },
    });
  } catch (err) {
    if (signal.aborted) throw run.timeout(err);
    throw new FetchRefusedError('network', 'The source could not be reached.', true, { cause: err });
  }
}

/** Where a redirect leads, resolved against the current URL; refused past maxRedirects or when its shape is. */
function redirectTarget(location: string, current: URL, redirectsSoFar: number, maxRedirects: number): URL {
  if (redirectsSoFar >= maxRedirects) {
    throw new FetchRefusedError(
      'too_many_redirects',
      `The source redirected more than ${maxRedirects} times.`,
      false,
    );
  }
  let next: URL;
  try {
    next = new URL(location, current);
  } catch (err) {
    throw new FetchRefusedError('bad_url', 'The source redirected to an invalid URL.', false, { cause: err });
  }
  const problem = urlShapeProblem(next);
  if (problem) {
    throw new FetchRefusedError('bad_url', `The source redirected to a URL that is refused: ${problem}`, false);
  }
  return next;
}

/** The body of a 2xx response, at most maxBytes; any other status is refused. */
async function readResponse(response: HopResponse, run: FetchRun): Promise<Buffer> {
  const maxBytes = run.opts.maxBytes;
  if (response.status < 200 || response.status > 299) {
    await response.body?.cancel().catch(() => {
      // the error body is not needed; a failed cancel changes nothing
    });
    throw refusedForStatus(response.status);
  }

  const encoding = response.headers.get('content-encoding');
  const declared = Number(response.headers.get('content-length') ?? NaN);
  if ((encoding === null || encoding === 'identity') && Number.isFinite(declared) && declared > maxBytes) {
    await response.body?.cancel().catch(() => {
      // refused on the declared length; the body is not needed
    });
    throw tooLarge(maxBytes);
  }

  try {
    return await readLimited(response.body, maxBytes);
  } catch (err) {
    if (err instanceof FetchRefusedError) throw err;
    if (run.signal.aborted) throw run.timeout(err);
    throw new FetchRefusedError('network', 'The source connection failed while reading.', true, { cause: err });
  }
}
