import { describe, expect, it, vi } from 'vitest';
import { AppError } from '../../platform/errors.ts';
import {
  assertFetchableUrl,
  classifyAddress,
  isAllowlisted,
  parseSourceUrl,
  type LookupFn,
  type UrlPolicy,
} from '../../platform/net/url-safety.ts';

const noAllowlist: UrlPolicy = { allowlist: [] };

/** A lookup that must never be called (IP literals and localhost names are not looked up). */
function forbiddenLookup() {
  return vi.fn<LookupFn>(async (hostname) => {
    throw new Error(`lookup must not be called (asked for ${hostname})`);
  });
}

/** A lookup answering from a fixed map; unknown names fail like ENOTFOUND. Nothing leaves the process. */
function mapLookup(map: Record<string, string[]>) {
  return vi.fn<LookupFn>(async (hostname) => {
    const found = map[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  });
}

async function refusal(promise: Promise<unknown>): Promise<AppError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_ingest_request');
    return e;
  }
  throw new Error('expected the URL to be refused');
}

function parseRefusal(raw: string): AppError {
  try {
    parseSourceUrl(raw);
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    const e = err as AppError;
    expect(e.status).toBe(400);
    expect(e.code).toBe('invalid_ingest_request');
    return e;
  }
  throw new Error(`expected ${raw} to be refused by parseSourceUrl`);
}

describe('parseSourceUrl', () => {
  it('accepts http and https URLs and returns a normalised URL', () => {
    expect(parseSourceUrl('https://example.com/a?b=c#d').href).toBe('https://example.com/a?b=c#d');
    expect(parseSourceUrl('  HTTP://Example.COM:80/x ').href).toBe('http://example.com/x');
    expect(parseSourceUrl('http://example.com:8080').origin).toBe('http://example.com:8080');
  });

  it.each([
    ['ftp://example.com/file.txt', 'ftp'],
    ['file:///etc/passwd', 'file'],
    ['javascript:alert(1)', 'javascript'],
    ['data:text/plain,hello', 'data'],
    ['gopher://example.com/', 'gopher'],
    ['ws://example.com/', 'ws'],
  ])('refuses the scheme of %s', (raw, scheme) => {
    const e = parseRefusal(raw);
    expect(e.message).toContain(`"${scheme}"`);
    expect(e.message).toMatch(/only http and https/);
  });

  it.each([
    'http://user:pass@example.com/',
    'https://user@example.com/',
    'http://:secret@example.com/',
    'http://user:pass@127.0.0.1:9977/',
  ])('refuses credentials in %s', (raw) => {
    expect(parseRefusal(raw).message).toMatch(/credentials/);
  });

  it.each(['', '   ', 'not a url', '/relative/path', 'http://', 'https://exa mple.com/', 'http://[::1/'])(
    'refuses the unparseable %j',
    (raw) => {
      expect(parseRefusal(raw).message).toMatch(/empty|not a valid/);
    },
  );

  it('refuses URLs longer than 2048 characters and accepts 2048', () => {
    const base = 'https://example.com/';
    const exactly = base + 'a'.repeat(2048 - base.length);
    expect(exactly.length).toBe(2048);
    expect(parseSourceUrl(exactly).href).toBe(exactly);
    expect(parseRefusal(exactly + 'a').message).toMatch(/longer than 2048/);
  });

  it('normalises numeric IPv4 spellings to dotted quads (what the address check then sees)', () => {
    for (const raw of [
      'http://127.1/',
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://0x7f000001/',
      'http://0x7f.1/',
    ]) {
      expect(parseSourceUrl(raw).hostname).toBe('127.0.0.1');
    }
  });
});

describe('isAllowlisted', () => {
  const policy: UrlPolicy = { allowlist: ['http://127.0.0.1:9977'] };
  it('matches the exact origin only', () => {
    expect(isAllowlisted(new URL('http://127.0.0.1:9977/page.html'), policy)).toBe(true);
    expect(isAllowlisted(new URL('http://127.0.0.1:9978/'), policy)).toBe(false);
    expect(isAllowlisted(new URL('https://127.0.0.1:9977/'), policy)).toBe(false);
    expect(isAllowlisted(new URL('http://localhost:9977/'), policy)).toBe(false);
    expect(isAllowlisted(new URL('http://127.0.0.1/'), policy)).toBe(false);
    expect(isAllowlisted(new URL('http://127.0.0.1:9977/'), noAllowlist)).toBe(false);
  });
  it('compares default ports the way URL origins do', () => {
    expect(isAllowlisted(new URL('http://fixture.test:80/x'), { allowlist: ['http://fixture.test'] })).toBe(true);
    expect(isAllowlisted(new URL('http://fixture.test/x'), { allowlist: ['http://fixture.test:8080'] })).toBe(false);
  });
});

describe('classifyAddress', () => {
  it.each([
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['10.0.0.1', 'private'],
    ['172.16.5.4', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['169.254.169.254', 'linkLocal'],
    ['100.64.0.1', 'carrierGradeNat'],
    ['0.0.0.0', 'unspecified'],
    ['0.1.2.3', 'unspecified'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'broadcast'],
    ['192.0.2.1', 'reserved'],
    ['198.18.0.1', 'reserved'],
    ['::1', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['[::1]', 'loopback'],
    ['::', 'unspecified'],
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'linkLocal'],
    ['::127.0.0.1', 'ipv4Compatible'],
    ['::7f00:1', 'ipv4Compatible'],
    ['::8.8.8.8', 'ipv4Compatible'],
    ['fe80::1', 'linkLocal'],
    ['fe80::1%eth0', 'linkLocal'],
    ['fc00::1', 'uniqueLocal'],
    ['fd12::1', 'uniqueLocal'],
    ['ff02::1', 'multicast'],
    ['64:ff9b::7f00:1', 'rfc6052'],
    ['64:ff9b::a00:1', 'rfc6052'],
    ['2002:7f00:1::1', '6to4'],
    ['2001:0:4136:e378:8000:63bf:3fff:fdd2', 'teredo'],
    ['2001:db8::1', 'reserved'],
    ['100::1', 'reserved'],
    ['fec0::1', 'reserved'],
    ['not-an-ip', 'invalid'],
    ['127.1', 'invalid'],
    ['', 'invalid'],
  ])('refuses %s (%s)', (ip, range) => {
    const c = classifyAddress(ip);
    expect(c.ok).toBe(false);
    // fec0::/10 and 100::/64 carry ipaddr.js names of their own; what matters is that they are refused.
    if (!['fec0::1', '100::1'].includes(ip)) expect(c.range).toBe(range);
  });

  it.each(['93.184.216.34', '8.8.8.8', '1.1.1.1', '2606:2800:220:1:248:1893:25c8:1946', '2a00:1450:4001:82b::200e'])(
    'accepts the public unicast address %s',
    (ip) => {
      expect(classifyAddress(ip)).toEqual({ ok: true, range: 'unicast' });
    },
  );
});

describe('assertFetchableUrl', () => {
  const literals: [string, RegExp][] = [
    ['http://127.0.0.1/', /loopback/],
    ['http://127.1/', /loopback/],
    ['http://2130706433/', /loopback/],
    ['http://0177.0.0.1/', /loopback/],
    ['http://0x7f000001/', /loopback/],
    ['http://0x7f.1/', /loopback/],
    ['http://127.0.0.1:9978/', /loopback/],
    ['http://10.0.0.1/', /private network/],
    ['http://172.16.5.4/', /private network/],
    ['http://192.168.1.1/', /private network/],
    ['http://169.254.169.254/latest/meta-data/', /link-local/],
    ['http://100.64.0.1/', /carrier-grade NAT/],
    ['http://0.0.0.0/', /unspecified/],
    ['http://0/', /unspecified/],
    ['http://224.0.0.1/', /multicast/],
    ['http://240.0.0.1/', /reserved/],
    ['http://255.255.255.255/', /broadcast/],
    ['http://[::1]/', /loopback/],
    ['http://[0:0:0:0:0:0:0:1]/', /loopback/],
    ['http://[::]/', /unspecified/],
    ['http://[::ffff:127.0.0.1]/', /loopback/],
    ['http://[::ffff:7f00:1]/', /loopback/],
    ['http://[::ffff:10.0.0.1]/', /private network/],
    ['http://[::127.0.0.1]/', /IPv4-compatible/],
    ['http://[fe80::1]/', /link-local/],
    ['http://[fc00::1]/', /unique local/],
    ['http://[fd12::1]/', /unique local/],
    ['http://[ff02::1]/', /multicast/],
    ['http://[64:ff9b::a9fe:a9fe]/', /NAT64/],
    ['http://[2002:a9fe:a9fe::1]/', /6to4/],
    ['http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', /Teredo/],
    ['https://127.0.0.1:443/', /loopback/],
  ];

  it.each(literals)('refuses %s without any lookup', async (raw, reason) => {
    const lookup = forbiddenLookup();
    const e = await refusal(assertFetchableUrl(parseSourceUrl(raw), noAllowlist, lookup));
    expect(e.message).toMatch(reason);
    expect(e.message).toMatch(/only public internet addresses/);
    expect(lookup).not.toHaveBeenCalled();
  });

  it.each(['http://localhost/', 'http://localhost:22/', 'http://LOCALHOST./', 'http://api.localhost/', 'http://a.b.localhost:8080/'])(
    'refuses %s as loopback without asking a resolver',
    async (raw) => {
      const lookup = forbiddenLookup();
      const e = await refusal(assertFetchableUrl(parseSourceUrl(raw), noAllowlist, lookup));
      expect(e.message).toMatch(/loopback/);
      expect(lookup).not.toHaveBeenCalled();
    },
  );

  it('refuses localhost with the default (system) lookup too', async () => {
    // localhost names are loopback by definition and are answered without a resolver.
    const e = await refusal(assertFetchableUrl(parseSourceUrl('http://localhost:9978/'), noAllowlist));
    expect(e.message).toMatch(/loopback/);
  });

  it('refuses a host name that resolves to loopback', async () => {
    const lookup = mapLookup({ 'loop.test': ['127.0.0.1'] });
    const e = await refusal(assertFetchableUrl(parseSourceUrl('http://loop.test/'), noAllowlist, lookup));
    expect(e.message).toMatch(/loopback/);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith('loop.test');
  });

  it('refuses a host name with one public and one private address, whatever the order', async () => {
    for (const addresses of [
      ['93.184.216.34', '10.1.2.3'],
      ['10.1.2.3', '93.184.216.34'],
      ['2606:2800:220:1:248:1893:25c8:1946', 'fd00::1'],
      ['93.184.216.34', '::ffff:192.168.0.10'],
    ]) {
      const lookup = mapLookup({ 'mixed.test': addresses });
      const e = await refusal(assertFetchableUrl(parseSourceUrl('https://mixed.test/doc'), noAllowlist, lookup));
      expect(e.message).toMatch(/private/);
      // The refused class is named; the resolved address itself is not disclosed.
      for (const a of addresses) expect(e.message).not.toContain(a);
    }
  });

  it.each([
    ['meta.test', '169.254.169.254', /link-local/],
    ['cgnat.test', '100.100.100.200', /carrier-grade NAT/],
    ['mapped.test', '::ffff:127.0.0.1', /loopback/],
    ['six.test', '::1', /loopback/],
    ['zero.test', '0.0.0.0', /unspecified/],
  ])('refuses %s resolving to %s', async (host, address, reason) => {
    const lookup = mapLookup({ [host]: [address] });
    const e = await refusal(assertFetchableUrl(parseSourceUrl(`http://${host}/`), noAllowlist, lookup));
    expect(e.message).toMatch(reason);
    expect(e.message).not.toContain(address);
  });

  it('accepts a host name whose addresses are all public (nothing is contacted)', async () => {
    const lookup = mapLookup({ 'example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'] });
    await expect(assertFetchableUrl(parseSourceUrl('https://example.com/page'), noAllowlist, lookup)).resolves.toEqual({
      addresses: ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
    });
    expect(lookup).toHaveBeenCalledTimes(1);
  });

  it('accepts a public IP literal without a lookup', async () => {
    const lookup = forbiddenLookup();
    await expect(assertFetchableUrl(parseSourceUrl('http://93.184.216.34/'), noAllowlist, lookup)).resolves.toEqual({
      addresses: ['93.184.216.34'],
    });
    expect(lookup).not.toHaveBeenCalled();
  });

  it('accepts a loopback origin that is allowlisted, and only that exact origin', async () => {
    const policy: UrlPolicy = { allowlist: ['http://127.0.0.1:9977'] };
    const lookup = forbiddenLookup();
    await expect(assertFetchableUrl(parseSourceUrl('http://127.0.0.1:9977/page.html'), policy, lookup)).resolves.toEqual({
      addresses: ['127.0.0.1'],
    });
    for (const raw of ['http://127.0.0.1:9978/', 'https://127.0.0.1:9977/', 'http://127.0.0.1/', 'http://[::1]:9977/']) {
      const e = await refusal(assertFetchableUrl(parseSourceUrl(raw), policy, lookup));
      expect(e.message).toMatch(/loopback/);
    }
  });

  it('accepts an allowlisted host name that resolves to loopback', async () => {
    const policy: UrlPolicy = { allowlist: ['http://fixture.test:9977'] };
    const lookup = mapLookup({ 'fixture.test': ['127.0.0.1'] });
    await expect(assertFetchableUrl(parseSourceUrl('http://fixture.test:9977/x'), policy, lookup)).resolves.toEqual({
      addresses: ['127.0.0.1'],
    });
    await refusal(assertFetchableUrl(parseSourceUrl('http://fixture.test:9978/x'), policy, lookup));
  });

  it('refuses host names that do not resolve, or resolve to nothing or to garbage', async () => {
    const lookup = vi.fn<LookupFn>(async (hostname) => {
      if (hostname === 'empty.test') return [];
      if (hostname === 'garbage.test') return [{ address: 'not-an-ip', family: 4 }];
      throw Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' });
    });
    for (const host of ['missing.test', 'empty.test', 'garbage.test']) {
      const e = await refusal(assertFetchableUrl(parseSourceUrl(`http://${host}/`), noAllowlist, lookup));
      expect(e.message).toMatch(/could not be resolved/);
    }
  });

  it('re-checks the URL shape of a URL object built elsewhere', async () => {
    const lookup = forbiddenLookup();
    await refusal(assertFetchableUrl(new URL('ftp://example.com/'), noAllowlist, lookup));
    await refusal(assertFetchableUrl(new URL('http://u:p@example.com/'), noAllowlist, lookup));
    expect(lookup).not.toHaveBeenCalled();
  });
});
