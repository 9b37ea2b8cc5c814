import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local HTTP server speaking the common rerank protocol (POST /v1/rerank: `{ model, query, documents,
 * top_n }` -> `{ results: [{ index, relevance_score }] }`), standing in for a provider that cannot run
 * here. It scores a document by how many of `favoured`'s words it holds, so a test knows the order to
 * expect; `fail` makes it answer 503; every request is recorded.
 */
export async function startRerankServer(favoured: string[]) {
  const requests: { model: string; query: string; documents: string[]; authorization: string | undefined }[] = [];
  let fail = false;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/rerank') return void res.writeHead(404).end();
      const parsed = JSON.parse(body) as { model: string; query: string; documents: string[] };
      requests.push({ ...parsed, authorization: req.headers.authorization });
      if (fail) return void res.writeHead(503).end();
      const results = parsed.documents.map((d, index) => ({
        index, relevance_score: favoured.filter((w) => d.toLowerCase().includes(w)).length / favoured.length,
      }));
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ results }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    requests,
    setFail: (v: boolean) => void (fail = v),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
