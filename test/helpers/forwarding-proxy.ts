import { createServer, request, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP proxy in front of one upstream origin that adds `Authorization: Bearer <credential>`
 * to every request and changes nothing else: method, path, body and every other header (Host and
 * Origin included) pass through, and the response comes back as it is. For MCP clients that cannot
 * send a credential (the MCP conformance suite), so that they exercise the real endpoint, with its
 * Host and Origin checks, through the same credential path as every other client. Tests only.
 */
export async function startForwardingProxy(upstream: string, credential: string): Promise<{ url: string; close(): Promise<void> }> {
  const target = new URL(upstream);
  const server = createServer((req, res) => {
    const headers: IncomingHttpHeaders = { ...req.headers, authorization: `Bearer ${credential}` };
    const forwarded = request(
      { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on('error', (err) => res.destroy(err));
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}
