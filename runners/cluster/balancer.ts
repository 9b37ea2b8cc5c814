import { createHash, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { HOME_HEADER, rendezvous } from '../../platform/net/affinity.ts';

/** One upstream of the balancer: a name for logs and the x-cairn-upstream header, and its port on 127.0.0.1. */
export type Upstream = { name: string; port: number };

export type Balancer = { port: number; close(): Promise<void> };

export type BalancerLimits = {
  /** Open connections one client address may hold; a connection past it is answered 503 and closed. */
  connectionsPerClient: number;
  /** A client or upstream connection that moves no byte for this long is closed (503 when nothing was answered yet). */
  idleMs: number;
  /** Time a client has to send its request headers. */
  headersMs: number;
};

export const DEFAULT_BALANCER_LIMITS: BalancerLimits = { connectionsPerClient: 128, idleMs: 120_000, headersMs: 15_000 };
/** Credentials whose account home the balancer remembers (least recently used leave first). */
const HOMES_HELD = 50_000;

/**
 * The local load balancer of `npm run cluster` (what a reverse proxy or a cloud load balancer is in
 * production). Requests and responses are streamed (uploads, MCP). The client's address goes in
 * X-Forwarded-For (the APIs trust the loopback hop, TRUST_PROXY=loopback), the upstream that answered
 * in x-cairn-upstream.
 *
 * Where a request goes: an authenticated request goes to its account's home, the serving upstream that
 * rendezvous hashing picks for the account (platform/net/affinity.ts), so each API holds about 1/N of
 * the accounts' index copies. The balancer learns a credential's account from the x-cairn-home header
 * of the API's first answer (and strips it); until then the credential itself is the key. Requests
 * without a credential alternate. An upstream that refuses the connection gets no more requests until
 * `isUp` says it is back, and its accounts move to their next choice meanwhile; the request it refused
 * is answered 503 service_unavailable, like every request while no upstream serves: clients retry
 * (with their idempotency keys, for writes).
 *
 * Abuse: when the upstream answers before the client has sent its whole body (a 401 before reading
 * it), the upstream request is dropped and the client's connection closed after the answer, so
 * half-sent requests cannot hold the upstream sockets; a client that goes away cancels its upstream
 * request; idle connections on either side close; one address holds at most `connectionsPerClient`.
 */
export async function startBalancer(opts: {
  host: string;
  port: number;
  upstreams: Upstream[];
  isUp(upstream: Upstream): boolean;
  markDown(upstream: Upstream): void;
  limits?: Partial<BalancerLimits>;
}): Promise<Balancer> {
  const limits = { ...DEFAULT_BALANCER_LIMITS, ...opts.limits };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256, timeout: limits.idleMs });
  const route = router(opts.upstreams, opts.isUp);

  const server = http.createServer((req, res) => {
    // Already answered 503 at connection (over its address's cap).
    if (refused.has(req.socket)) return void req.resume();
    const credential = credentialKey(req);
    const upstream = route.pick(credential);
    if (!upstream) {
      req.resume();
      unavailable(res, 'No API process is serving; retry shortly.');
      return;
    }
    const client = req.socket.remoteAddress ?? '';
    const forwarded = req.headers['x-forwarded-for'];
    const proxied = http.request({
      agent,
      host: '127.0.0.1',
      port: upstream.port,
      method: req.method,
      path: req.url,
      headers: { ...req.headers, 'x-forwarded-for': forwarded ? `${String(forwarded)}, ${client}` : client },
    });
    let answered = false;
    proxied.on('response', (up) => {
      answered = true;
      const { [HOME_HEADER]: home, ...headers } = up.headers;
      if (credential && typeof home === 'string') route.learn(credential, home);
      // The client is still sending a body the upstream did not wait for: answer, then close.
      if (!req.complete) {
        delete headers['keep-alive'];
        headers.connection = 'close';
      }
      res.writeHead(up.statusCode ?? 502, { ...headers, 'x-cairn-upstream': upstream.name });
      up.pipe(res);
      up.on('error', () => res.destroy());
      up.on('end', () => {
        if (req.complete) return;
        req.unpipe(proxied);
        proxied.destroy();
        res.once('finish', () => req.destroy());
      });
    });
    proxied.on('timeout', () => proxied.destroy(Object.assign(new Error('upstream idle'), { code: 'ETIMEDOUT' })));
    proxied.on('error', (err: NodeJS.ErrnoException) => {
      if (answered) return res.destroy();
      if (err.code === 'ECONNREFUSED') opts.markDown(upstream);
      unavailable(res, `The API process did not answer (${err.code ?? err.message}); retry.`);
    });
    // A client that goes away cancels its upstream request.
    res.on('close', () => {
      if (!res.writableFinished) proxied.destroy();
    });
    req.pipe(proxied);
  });
  server.keepAliveTimeout = 65_000;
  server.headersTimeout = limits.headersMs;
  server.timeout = limits.idleMs;
  const refused = capConnections(server, limits.connectionsPerClient);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  return {
    port: (server.address() as AddressInfo).port,
    async close() {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      agent.destroy();
    },
  };
}

/** Which upstream serves a request: the account's home when the credential is known, else the next in turn. */
function router(upstreams: Upstream[], isUp: (u: Upstream) => boolean) {
  const homes = new Map<string, string>();
  let next = 0;
  return {
    pick(credential: string | null): Upstream | undefined {
      const serving = upstreams.filter(isUp);
      if (serving.length === 0) return undefined;
      if (credential) {
        const home = homes.get(credential);
        return rendezvous(home ?? credential, serving);
      }
      next = (next + 1) % serving.length;
      return serving[next];
    },
    learn(credential: string, home: string) {
      if (homes.get(credential) === home) return;
      homes.delete(credential);
      homes.set(credential, home);
      if (homes.size > HOMES_HELD) homes.delete(homes.keys().next().value!);
    },
  };
}

/** A digest of the request's credential (bearer token, else its cookies), or null when it has none. */
function credentialKey(req: http.IncomingMessage): string | null {
  const credential = req.headers.authorization ?? req.headers.cookie;
  return credential ? createHash('sha256').update(credential).digest('base64url') : null;
}

function unavailable(res: http.ServerResponse, message: string) {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
  res.end(errorBody(message));
}

const errorBody = (message: string) => JSON.stringify({ error: { code: 'service_unavailable', message, requestId: randomUUID() } });

/**
 * At most `cap` open connections per client address: the next is answered 503 and closed before any
 * request is read. Returns the connections so refused (their requests are not served).
 */
function capConnections(server: http.Server, cap: number): WeakSet<Socket> {
  const open = new Map<string, number>();
  const refused = new WeakSet<Socket>();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const count = (open.get(address) ?? 0) + 1;
    open.set(address, count);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left === 0) open.delete(address);
      else open.set(address, left);
    });
    if (count > cap) {
      refused.add(socket);
      const body = errorBody(`Too many open connections from this address (at most ${cap}); retry.`);
      socket.write(
        `HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json; charset=utf-8\r\nretry-after: 1\r\n` +
          `connection: close\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      socket.destroySoon();
    }
  });
  return refused;
}
