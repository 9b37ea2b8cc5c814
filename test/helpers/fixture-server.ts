import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Served = { status?: number; type?: string; body?: string | Buffer; headers?: Record<string, string> };

/** A local HTTP server with programmable routes that counts every request it receives. */
export async function startFixtureServer(routes: Record<string, Served | ((url: URL) => Served)> = {}) {
  const hits: string[] = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://fixture');
    hits.push(url.pathname);
    const route = routes[url.pathname];
    const r = typeof route === 'function' ? route(url) : route;
    if (!r) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(r.status ?? 200, { 'content-type': r.type ?? 'text/plain', ...r.headers }).end(r.body ?? '');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    hits,
    routes,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
