import { createHash } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A local HTTP server speaking the OpenAI embeddings protocol (POST /v1/embeddings), standing in for a
 * provider that cannot run here. Its vectors are deterministic and carry meaning in a small way: words
 * of one concept (SYNONYMS) land on the same dimension, so "automobile purchase" is near "I bought a
 * car" although they share no word. `fail` makes it answer 503; every request is recorded.
 */

const DIMENSIONS = 64;
const SYNONYMS: string[][] = [
  ['car', 'automobile', 'vehicle', 'sedan'],
  ['buy', 'bought', 'purchase', 'purchased', 'acquired'],
  ['doctor', 'physician', 'clinic'],
  ['dog', 'puppy', 'hound'],
];
const concept = new Map(SYNONYMS.flatMap((words) => words.map((w) => [w, words[0]!] as const)));

export function fakeEmbedding(text: string): number[] {
  const v = new Array<number>(DIMENSIONS).fill(0);
  for (const raw of text.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    const word = concept.get(raw) ?? raw;
    v[createHash('sha256').update(word).digest()[0]! % DIMENSIONS]! += 1;
  }
  return v;
}

export async function startEmbeddingsServer() {
  const requests: { model: string; input: string[]; authorization: string | undefined }[] = [];
  let fail = false;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/embeddings') {
        res.writeHead(404).end();
        return;
      }
      const { model, input } = JSON.parse(body) as { model: string; input: string[] };
      requests.push({ model, input, authorization: req.headers.authorization });
      if (fail) {
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":{"message":"overloaded"}}');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
        object: 'list', model,
        data: input.map((text, index) => ({ object: 'embedding', index, embedding: fakeEmbedding(text) })),
        usage: { prompt_tokens: input.length, total_tokens: input.length },
      }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}/v1`,
    requests,
    setFailing: (on: boolean) => void (fail = on),
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
