/**
 * safeFetch against real HTTP servers on 127.0.0.1 (free ports). Nothing beyond 127.0.0.1 is ever
 * contacted: host names are answered by injected lookups, and the only public addresses used are
 * refused before any connection.
 */
import http from 'node:http';
import zlib from 'node:zlib';
import type net from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  FetchRefusedError,
  safeFetch,
  type SafeFetchOptions,
} from '../../platform/net/safe-fetch.ts';
import type { LookupFn } from '../../platform/net/url-safety.ts';

type Hit = { method: string; url: string; host: string | undefined; localAddress: string | undefined };

type TestServer = {
  port: number;
  origin: string;
  hits: Hit[];
  /** TCP connections accepted, whether or not a request followed. */
  connections: number;
  /** Forget hits and connections counted so far. */
  reset(): void;
  close(): Promise<void>;
};

async function startServer(handler: (req: http.IncomingMessage, res: http.ServerResponse) => void): Promise<TestServer> {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    hits.push({
      method: req.method ?? '',
      url: req.url ?? '',
      host: req.headers.host,
      localAddress: req.socket.localAddress,
    });
    handler(req, res);
  });
  const state = { connections: 0 };
  server.on('connection', () => {
    state.connections += 1;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    origin: `http://127.0.0.1:${port}`,
    hits,
    get connections() {
      return state.connections;
    },
    reset() {
      hits.length = 0;
      state.connections = 0;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A lookup that must never be called. */
const noLookup = () =>
  vi.fn<LookupFn>(async (hostname) => {
    throw new Error(`unexpected lookup of ${hostname}`);
  });

/** A lookup answering from a map, for every call; unknown names fail like ENOTFOUND. */
const mapLookup = (map: Record<string, string[]>) =>
  vi.fn<LookupFn>(async (hostname) => {
    const found = map[hostname];
    if (!found) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  });

async function refused(promise: Promise<unknown>): Promise<FetchRefusedError> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(FetchRefusedError);
    return err as FetchRefusedError;
  }
  throw new Error('expected safeFetch to be refused');
}

const BIG = Buffer.alloc(256 * 1024, 'x');
const GZIP_BOMB = zlib.gzipSync(Buffer.alloc(10_000_000, 'z'));

let fixture: TestServer; // allowlisted, like the conformance kit's fixture server
let canary: TestServer; // never allowlisted; must never be contacted
let extraServers: TestServer[] = [];

function opts(extra: Partial<SafeFetchOptions> = {}): SafeFetchOptions {
  return {
    policy: { allowlist: [fixture.origin] },
    maxBytes: 1_000_000,
    timeoutMs: 5_000,
    lookup: noLookup(),
    ...extra,
  };
}

beforeAll(async () => {
  canary = await startServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' }).end('canary');
  });
  fixture = await startServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    const p = url.pathname;
    if (p === '/hello.html') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end('<h1>hello</h1>');
    } else if (p === '/ua') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(req.headers['user-agent'] ?? '');
    } else if (p === '/empty') {
      res.writeHead(204).end();
    } else if (p === '/redirect') {
      res.writeHead(Number(url.searchParams.get('status') ?? 302), { location: url.searchParams.get('to') ?? '/' }).end();
    } else if (p === '/chain') {
      const n = Number(url.searchParams.get('n'));
      res.writeHead(302, { location: n <= 1 ? '/hello.html' : `/chain?n=${n - 1}` }).end();
    } else if (p === '/loop') {
      res.writeHead(302, { location: '/loop' }).end();
    } else if (p === '/big-declared') {
      res.writeHead(200, { 'content-type': 'application/octet-stream', 'content-length': BIG.length }).end(BIG);
    } else if (p === '/big-chunked') {
      // No content-length: the limit must be enforced while streaming.
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      let sent = 0;
      const push = () => {
        while (sent < BIG.length) {
          const chunk = BIG.subarray(sent, sent + 16 * 1024);
          sent += chunk.length;
          if (!res.write(chunk)) {
            res.once('drain', push);
            return;
          }
        }
        res.end();
      };
      push();
    } else if (p === '/gzip-bomb') {
      // 10 KB on the wire, 10 MB once decoded: the limit counts the decoded bytes.
      res.writeHead(200, { 'content-type': 'text/plain', 'content-encoding': 'gzip', 'content-length': GZIP_BOMB.length }).end(GZIP_BOMB);
    } else if (p === '/exact') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(Buffer.alloc(1000, 'y'));
    } else if (p === '/hang') {
      // Never answers.
    } else if (p === '/slow-body') {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('first part, then nothing');
    } else if (p === '/status') {
      res.writeHead(Number(url.searchParams.get('code'))).end('status body');
    } else if (p === '/host') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end(`host=${req.headers.host}`);
    } else {
      res.writeHead(404).end('not found');
    }
  });
});

afterEach(async () => {
  // No test may ever reach the canary (reset afterwards, so that a breach fails only its own test).
  const breach = { connections: canary.connections, hits: [...canary.hits] };
  canary.reset();
  await Promise.all(extraServers.map((s) => s.close()));
  extraServers = [];
  expect(breach).toEqual({ connections: 0, hits: [] });
});

afterAll(async () => {
  await Promise.all([fixture?.close(), canary?.close()]);
});

describe('safeFetch: allowlisted origin', () => {
  it('fetches an allowlisted loopback origin: status, content type and bytes', async () => {
    const before = fixture.hits.length;
    const lookup = noLookup();
    const result = await safeFetch(`${fixture.origin}/hello.html`, opts({ lookup }));
    expect(result.status).toBe(200);
    expect(result.contentType).toBe('text/html; charset=utf-8');
    expect(result.bytes).toBeInstanceOf(Buffer);
    expect(result.bytes.toString('utf8')).toBe('<h1>hello</h1>');
    expect(result.finalUrl).toBe(`${fixture.origin}/hello.html`);
    expect(result.redirects).toEqual([]);
    expect(result.crossSiteRedirect).toBe(false);
    expect(lookup).not.toHaveBeenCalled(); // IP literal: no lookup
    expect(fixture.hits.slice(before)).toEqual([
      { method: 'GET', url: '/hello.html', host: `127.0.0.1:${fixture.port}`, localAddress: '127.0.0.1' },
    ]);
  });

  it('accepts a URL object and sends the user agent', async () => {
    const dflt = await safeFetch(new URL(`${fixture.origin}/ua`), opts());
    expect(dflt.bytes.toString()).toMatch(/^CairnIngest\//);
    const custom = await safeFetch(`${fixture.origin}/ua`, opts({ userAgent: 'test-agent/1' }));
    expect(custom.bytes.toString()).toBe('test-agent/1');
  });

  it('returns an empty body for 204', async () => {
    const result = await safeFetch(`${fixture.origin}/empty`, opts());
    expect(result.status).toBe(204);
    expect(result.bytes.length).toBe(0);
  });

  it('follows same-origin relative redirects and reports them', async () => {
    const result = await safeFetch(`${fixture.origin}/chain?n=3`, opts());
    expect(result.status).toBe(200);
    expect(result.bytes.toString()).toBe('<h1>hello</h1>');
    expect(result.redirects).toEqual([
      `${fixture.origin}/chain?n=2`,
      `${fixture.origin}/chain?n=1`,
      `${fixture.origin}/hello.html`,
    ]);
    expect(result.finalUrl).toBe(`${fixture.origin}/hello.html`);
    expect(result.crossSiteRedirect).toBe(false);
  });

  it.each([301, 303, 307, 308])('follows a %i redirect', async (status) => {
    const result = await safeFetch(`${fixture.origin}/redirect?status=${status}&to=/hello.html`, opts());
    expect(result.status).toBe(200);
    expect(result.redirects).toEqual([`${fixture.origin}/hello.html`]);
  });
});

describe('safeFetch: blocked addresses are never contacted', () => {
  it('refuses a loopback server that is not allowlisted and never connects to it', async () => {
    for (const url of [
      `${canary.origin}/`,
      `http://localhost:${canary.port}/`,
      `http://127.1:${canary.port}/`,
      `http://2130706433:${canary.port}/`,
      `http://0x7f.1:${canary.port}/`,
      `http://[::ffff:127.0.0.1]:${canary.port}/`,
    ]) {
      const lookup = noLookup();
      const e = await refused(safeFetch(url, opts({ lookup })));
      expect(e.reason).toBe('blocked_address');
      expect(e.retryable).toBe(false);
      expect(e.publicMessage).toMatch(/loopback/);
      expect(lookup).not.toHaveBeenCalled();
    }
    expect(canary.connections).toBe(0);
  });

  it('refuses a host name that resolves to loopback (or to a public and a loopback address) before connecting', async () => {
    // Loopback first: an implementation that skipped the check would reach the canary, never the network.
    for (const addresses of [['127.0.0.1'], ['127.0.0.1', '93.184.216.34'], ['127.0.0.1', '::ffff:93.184.216.34']]) {
      const lookup = mapLookup({ 'evil.test': addresses });
      const e = await refused(safeFetch(`http://evil.test:${canary.port}/`, opts({ lookup })));
      expect(e.reason).toBe('blocked_address');
      expect(e.publicMessage).not.toContain('127.0.0.1');
      expect(lookup).toHaveBeenCalledTimes(1);
    }
    expect(canary.connections).toBe(0);
  });

  it('refuses other local spellings of this machine without connecting', async () => {
    // Only spellings that land on this machine: even a broken implementation must not reach the
    // network from a test (private and link-local classes are covered by the unit tests).
    for (const url of [`http://0.0.0.0:${canary.port}/`, `http://0:${canary.port}/`, `http://[::1]:${canary.port}/`]) {
      const e = await refused(safeFetch(url, opts()));
      expect(e.reason).toBe('blocked_address');
    }
    expect(canary.connections).toBe(0);
  });

  it('refuses a redirect from the allowlisted server to another loopback port; the target is never hit', async () => {
    for (const to of [
      `${canary.origin}/secret`,
      `http://localhost:${canary.port}/`,
      `http://[::ffff:7f00:1]:${canary.port}/`,
      `//127.0.0.1:${canary.port}/protocol-relative`,
    ]) {
      const before = fixture.hits.length;
      const e = await refused(safeFetch(`${fixture.origin}/redirect?to=${encodeURIComponent(to)}`, opts()));
      expect(e.reason).toBe('blocked_address');
      expect(e.retryable).toBe(false);
      expect(fixture.hits.length).toBe(before + 1);
    }
    expect(canary.connections).toBe(0);
  });

  it('refuses a redirect to a host name that resolves to loopback', async () => {
    const lookup = mapLookup({ 'internal.test': ['127.0.0.1'] });
    const to = `http://internal.test:${canary.port}/`;
    const e = await refused(safeFetch(`${fixture.origin}/redirect?to=${encodeURIComponent(to)}`, opts({ lookup })));
    expect(e.reason).toBe('blocked_address');
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(canary.connections).toBe(0);
  });

  it('refuses redirects to other schemes or to URLs with credentials', async () => {
    for (const to of ['file:///etc/passwd', 'ftp://example.com/x', `http://user:pass@127.0.0.1:${fixture.port}/hello.html`]) {
      const e = await refused(safeFetch(`${fixture.origin}/redirect?to=${encodeURIComponent(to)}`, opts()));
      expect(e.reason).toBe('bad_url');
      expect(e.retryable).toBe(false);
    }
  });
});

describe('safeFetch: bad URLs', () => {
  it.each([
    'ftp://127.0.0.1/',
    'file:///etc/passwd',
    'javascript:alert(1)',
    'data:text/plain,hi',
    'not a url',
  ])('refuses %s as bad_url', async (url) => {
    const e = await refused(safeFetch(url, opts()));
    expect(e.reason).toBe('bad_url');
    expect(e.retryable).toBe(false);
  });

  it('refuses credentials even on the allowlisted origin', async () => {
    const before = fixture.hits.length;
    const e = await refused(safeFetch(`http://user:pass@127.0.0.1:${fixture.port}/hello.html`, opts()));
    expect(e.reason).toBe('bad_url');
    expect(e.publicMessage).toMatch(/credentials/);
    expect(fixture.hits.length).toBe(before);
  });
});

describe('safeFetch: limits', () => {
  it('stops a redirect loop with too_many_redirects after the default 5 redirects', async () => {
    const before = fixture.hits.length;
    const e = await refused(safeFetch(`${fixture.origin}/loop`, opts()));
    expect(e.reason).toBe('too_many_redirects');
    expect(e.retryable).toBe(false);
    expect(fixture.hits.length - before).toBe(6); // the first request and 5 followed redirects
  });

  it('honours maxRedirects', async () => {
    const before = fixture.hits.length;
    const e = await refused(safeFetch(`${fixture.origin}/loop`, opts({ maxRedirects: 2 })));
    expect(e.reason).toBe('too_many_redirects');
    expect(fixture.hits.length - before).toBe(3);
    await expect(safeFetch(`${fixture.origin}/chain?n=2`, opts({ maxRedirects: 2 }))).resolves.toMatchObject({ status: 200 });
    const none = await refused(safeFetch(`${fixture.origin}/chain?n=1`, opts({ maxRedirects: 0 })));
    expect(none.reason).toBe('too_many_redirects');
  });

  it('refuses a body over maxBytes, declared or streamed', async () => {
    for (const path of ['/big-declared', '/big-chunked']) {
      const e = await refused(safeFetch(`${fixture.origin}${path}`, opts({ maxBytes: 10_000 })));
      expect(e.reason).toBe('too_large');
      expect(e.retryable).toBe(false);
    }
  });

  it('counts decoded bytes: a small gzip body that inflates past maxBytes is refused', async () => {
    const e = await refused(safeFetch(`${fixture.origin}/gzip-bomb`, opts({ maxBytes: 1_000_000 })));
    expect(e.reason).toBe('too_large');
    expect((await safeFetch(`${fixture.origin}/gzip-bomb`, opts({ maxBytes: 20_000_000 }))).bytes.length).toBe(10_000_000);
  });

  it('accepts a body of exactly maxBytes and refuses one byte less of allowance', async () => {
    const ok = await safeFetch(`${fixture.origin}/exact`, opts({ maxBytes: 1000 }));
    expect(ok.bytes.length).toBe(1000);
    const e = await refused(safeFetch(`${fixture.origin}/exact`, opts({ maxBytes: 999 })));
    expect(e.reason).toBe('too_large');
  });

  it('gives up on a server that never answers with timeout', async () => {
    const e = await refused(safeFetch(`${fixture.origin}/hang`, opts({ timeoutMs: 300 })));
    expect(e.reason).toBe('timeout');
    expect(e.retryable).toBe(true);
  });

  it('gives up on a body that stalls with timeout', async () => {
    const e = await refused(safeFetch(`${fixture.origin}/slow-body`, opts({ timeoutMs: 300 })));
    expect(e.reason).toBe('timeout');
  });

  it('times out a lookup that never answers', async () => {
    const lookup = vi.fn<LookupFn>(() => new Promise(() => {}));
    const e = await refused(safeFetch('http://stuck.test/', opts({ lookup, timeoutMs: 300 })));
    expect(e.reason).toBe('timeout');
    expect(lookup).toHaveBeenCalledTimes(1);
  });
});

describe('safeFetch: HTTP status and network failures', () => {
  it.each([
    [404, false],
    [410, false],
    [400, false],
    [429, true],
    [500, true],
    [503, true],
  ])('refuses a final status %i (retryable %s)', async (code, retryable) => {
    const e = await refused(safeFetch(`${fixture.origin}/status?code=${code}`, opts()));
    expect(e.reason).toBe('http_status');
    expect(e.status).toBe(code);
    expect(e.retryable).toBe(retryable);
  });

  it('treats a redirect status without Location as a final non-2xx status', async () => {
    const e = await refused(safeFetch(`${fixture.origin}/status?code=302`, opts()));
    expect(e.reason).toBe('http_status');
  });

  it('reports a refused connection on an allowlisted origin as a retryable network failure', async () => {
    const gone = await startServer((_req, res) => res.end());
    const origin = gone.origin;
    await gone.close();
    const e = await refused(safeFetch(`${origin}/`, opts({ policy: { allowlist: [origin] } })));
    expect(e.reason).toBe('network');
    expect(e.retryable).toBe(true);
  });

  it('reports an unknown host name as a non-retryable network failure', async () => {
    const e = await refused(safeFetch('http://nowhere.test/', opts({ lookup: mapLookup({}) })));
    expect(e.reason).toBe('network');
    expect(e.retryable).toBe(false);
  });
});

describe('safeFetch: DNS rebinding', () => {
  it('resolves once per hop and connects to the checked address, sending the host name', async () => {
    const origin = `http://rebind.test:${fixture.port}`;
    let calls = 0;
    // First answer: loopback (allowed: this exact origin is allowlisted). Any later lookup fails, so a
    // second resolution would make the fetch fail instead of reaching the server.
    const lookup = vi.fn<LookupFn>(async (hostname) => {
      calls += 1;
      if (hostname === 'rebind.test' && calls === 1) return [{ address: '127.0.0.1', family: 4 }];
      throw Object.assign(new Error('second lookup'), { code: 'EREBIND' });
    });
    const before = fixture.hits.length;
    const result = await safeFetch(`${origin}/host`, opts({ policy: { allowlist: [origin] }, lookup }));
    expect(result.status).toBe(200);
    expect(result.bytes.toString()).toBe(`host=rebind.test:${fixture.port}`);
    expect(lookup).toHaveBeenCalledTimes(1);
    expect(lookup).toHaveBeenCalledWith('rebind.test');
    expect(fixture.hits.slice(before)).toEqual([
      { method: 'GET', url: '/host', host: `rebind.test:${fixture.port}`, localAddress: '127.0.0.1' },
    ]);
  });

  it('resolves again for each redirect hop, exactly once per hop', async () => {
    const origin = `http://rebind.test:${fixture.port}`;
    const lookup = mapLookup({ 'rebind.test': ['127.0.0.1'] });
    const result = await safeFetch(`${origin}/chain?n=2`, opts({ policy: { allowlist: [origin] }, lookup }));
    expect(result.status).toBe(200);
    expect(result.redirects).toHaveLength(2);
    expect(lookup).toHaveBeenCalledTimes(3);
  });

  it('refuses when the only lookup answers loopback for a name that is not allowlisted', async () => {
    let calls = 0;
    const lookup = vi.fn<LookupFn>(async () => {
      calls += 1;
      // A public first answer would be connected to for real, so the test uses the refusing order:
      // what matters is that the answer checked is the answer used, with one lookup only.
      return [{ address: '127.0.0.1', family: 4 }];
    });
    const e = await refused(safeFetch(`http://rebind.test:${canary.port}/`, opts({ lookup })));
    expect(e.reason).toBe('blocked_address');
    expect(calls).toBe(1);
    expect(canary.connections).toBe(0);
  });
});

describe('safeFetch: cross-site redirects', () => {
  it('reports a redirect to another host name as cross-site', async () => {
    const other = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('other');
    });
    extraServers.push(other);
    const otherOrigin = `http://other.test:${other.port}`;
    const lookup = mapLookup({ 'other.test': ['127.0.0.1'] });
    const result = await safeFetch(
      `${fixture.origin}/redirect?to=${encodeURIComponent(`${otherOrigin}/x`)}`,
      opts({ policy: { allowlist: [fixture.origin, otherOrigin] }, lookup }),
    );
    expect(result.bytes.toString()).toBe('other');
    expect(result.finalUrl).toBe(`${otherOrigin}/x`);
    expect(result.redirects).toEqual([`${otherOrigin}/x`]);
    expect(result.crossSiteRedirect).toBe(true);
    expect(other.hits.map((h) => h.host)).toEqual([`other.test:${other.port}`]);
  });

  it('refuses a redirect from one allowlisted origin to a loopback origin that is not allowlisted', async () => {
    const other = await startServer((_req, res) => res.end('must not be reached'));
    extraServers.push(other);
    const e = await refused(
      safeFetch(`${fixture.origin}/redirect?to=${encodeURIComponent(`${other.origin}/`)}`, opts()),
    );
    expect(e.reason).toBe('blocked_address');
    expect(other.connections).toBe(0);
  });
});
