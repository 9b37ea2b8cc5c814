import { randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One upstream of the balancer: a name for logs and the x-cairn-upstream header, and its port on 127.0.0.1. */
export type Upstream = { name: string; port: number };

export type Balancer = { port: number; close(): Promise<void> };

/**
 * The local load balancer of `npm run cluster` (what a reverse proxy or a cloud load balancer is in
 * production): each request goes to the next upstream that `isUp` says is serving, alternating between
 * them; requests and responses are streamed (uploads, MCP's event streams). The client's address goes
 * in X-Forwarded-For (the APIs trust the loopback hop, TRUST_PROXY=loopback), and the upstream that
 * answered in x-cairn-upstream. An upstream that refuses the connection gets no more requests until
 * `isUp` says it is back; the request it refused is answered 503 service_unavailable, like every
 * request while no upstream serves: clients retry (with their idempotency keys, for writes).
 */
export async function startBalancer(opts: {
  host: string;
  port: number;
  upstreams: Upstream[];
  isUp(upstream: Upstream): boolean;
  markDown(upstream: Upstream): void;
}): Promise<Balancer> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  let next = 0;

  const pick = (): Upstream | undefined => {
    for (let i = 0; i < opts.upstreams.length; i++) {
      const candidate = opts.upstreams[(next + i) % opts.upstreams.length]!;
      if (opts.isUp(candidate)) {
        next = (next + i + 1) % opts.upstreams.length;
        return candidate;
      }
    }
    return undefined;
  };

  const unavailable = (res: http.ServerResponse, message: string) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    res.writeHead(503, { 'content-type': 'application/json; charset=utf-8', 'retry-after': '1' });
    res.end(JSON.stringify({ error: { code: 'service_unavailable', message, requestId: randomUUID() } }));
  };

  const server = http.createServer((req, res) => {
    const upstream = pick();
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
    proxied.on('response', (up) => {
      res.writeHead(up.statusCode ?? 502, { ...up.headers, 'x-cairn-upstream': upstream.name });
      up.pipe(res);
      up.on('error', () => res.destroy());
    });
    proxied.on('error', (err: NodeJS.ErrnoException) => {
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
