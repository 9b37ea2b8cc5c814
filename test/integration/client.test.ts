import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { CairnError, createClient } from '../../packages/client/src/index.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The TypeScript client (packages/client) against the real API and worker, over HTTP: the README's
// quick start flows, the typed error, and retries that keep the call's idempotency key.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let apiKey: string;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  const account = await createTestAccount(db.orm);
  ({ secret: apiKey } = await createApiKey(db.orm.em.fork(), account.id, {
    name: 'client', scopes: ['ingest', 'query', 'memory.read', 'memory.write'], maxPreset: 'accuracy',
  }));
});
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

describe('the TypeScript client', () => {
  it('ingests a file and waits for it, writes memory and waits for it, and finds both with an evidence query', async () => {
    const cairn = createClient({ baseUrl: api.baseUrl, apiKey });
    const plan = await cairn.ingest.planFile({ filename: 'heron.md', contentType: 'text/markdown', bytes: new TextEncoder().encode('# Heron\n\nThe Quillmarsh heron lighthouse has 4711 steps.\n') });
    expect(plan.records.total).toBeGreaterThan(0);
    const upload = await cairn.ingest.file({ filename: 'heron.md', contentType: 'text/markdown', bytes: new TextEncoder().encode('# Heron\n\nThe Quillmarsh heron lighthouse has 4711 steps.\n') });
    expect((await upload.wait(120_000)).status).toBe('succeeded');

    await cairn.memory.peer('maria');
    await cairn.memory.session('chat-1');
    const write = await cairn.memory.add('chat-1', { peer_id: 'maria', messages: [{ role: 'user', content: 'I keep bees behind the Quillmarsh lighthouse.' }] });
    expect(write.receipt.status).toBe('processing');
    expect((await write.wait(120_000)).status).toBe('succeeded');

    const found = await cairn.query.evidence('How many steps does the Quillmarsh lighthouse have?');
    expect(JSON.stringify(found)).toContain('4711');
    const bees = await cairn.query.evidence('Who keeps bees behind the lighthouse?');
    expect(JSON.stringify(bees)).toContain('bees');
  });

  it('throws a CairnError with the envelope code, and does not retry what is not retryable', async () => {
    let calls = 0;
    const counting: typeof fetch = (input, init) => {
      calls++;
      return fetch(input, init);
    };
    const cairn = createClient({ baseUrl: api.baseUrl, apiKey: 'cairn_sk_not-a-real-key', fetch: counting });
    const err = await cairn.query.evidence('anything').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CairnError);
    expect(err).toMatchObject({ status: 401, code: 'unauthorized', retryable: false });
    expect(calls).toBe(1);
  });

  it('retries a 503 with the same idempotency key until the service answers', async () => {
    // A proxy that answers the first two tries 503 and forwards the third.
    const bodies: string[] = [];
    const proxy = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        bodies.push(body);
        if (bodies.length <= 2) {
          res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'service_unavailable', message: 'try again', requestId: 'r' } }));
          return;
        }
        void fetch(`${api.baseUrl}${req.url}`, { method: req.method, headers: { authorization: req.headers.authorization!, 'content-type': 'application/json' }, body })
          .then(async (up) => res.writeHead(up.status, { 'content-type': 'application/json' }).end(await up.text()));
      });
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', () => resolve()));
    try {
      const cairn = createClient({ baseUrl: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, apiKey, pollMs: 10 });
      const result = await cairn.query.evidence('Quillmarsh lighthouse steps');
      expect(JSON.stringify(result)).toContain('4711');
      expect(bodies).toHaveLength(3);
      const keys = bodies.map((b) => JSON.parse(b).idempotencyKey as string);
      expect(new Set(keys).size).toBe(1);
    } finally {
      proxy.close();
    }
  });
});
