import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { bound, sql } from '../../platform/db/sql.ts';
import { ApiClient, createTestAccount, eventually, type Json } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startEmbeddingsServer } from '../helpers/embeddings-server.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Optional semantic retrieval (EMBEDDINGS_*) against a local server speaking the embeddings protocol:
// the worker stores messages' and excerpts' vectors with them, an accuracy query fuses the documents
// nearest the question in meaning with the lexical ranking; writes never wait on the provider, and a
// query ranks lexically when it cannot embed the question, saying so.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let provider: Awaited<ReturnType<typeof startEmbeddingsServer>>;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let client: ApiClient;
let key: string;
const MODEL = 'test-embedding-small';

const mem = (method: 'POST' | 'GET', path: string, body?: unknown) =>
  client.call(method, `/v1/workspaces/default${path}`, { as: { bearer: key }, ...(body === undefined ? {} : { body }) });

async function say(peer: string, session: string, content: string) {
  await mem('POST', '/peers', { id: peer });
  await mem('POST', '/sessions', { id: session });
  const r = await mem('POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content }] });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  const ev = await eventually(async () => {
    const e = await mem('GET', `/events/${r.body.event_id}`);
    return ['succeeded', 'failed'].includes(e.body?.status) ? e.body : null;
  }, 'event', 60_000);
  expect(ev.status).toBe('succeeded');
  return r.body.results[0].message_id as string;
}

const query = async (text: string, preset: 'accuracy' | 'efficient') => {
  const r = await client.post('/v1/query', { as: { bearer: key }, body: { idempotencyKey: `q-${randomUUID()}`, mode: 'evidence', preset, query: text } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body as { evidence: Json[]; limitations: { code: string }[] };
};

beforeAll(async () => {
  db = await createTestDatabase();
  provider = await startEmbeddingsServer();
  const env = { EMBEDDINGS_BASE_URL: provider.baseUrl, EMBEDDINGS_MODEL: MODEL, EMBEDDINGS_API_KEY: 'sk-test-embeddings' };
  api = await startApi({ orm: db.orm, temporal, taskQueue, env });
  worker = await startWorker({ orm: db.orm, taskQueue, embeddings: api.config.embeddings });
  client = new ApiClient(api.baseUrl);
  const a = await createTestAccount(db.orm, { monthlyCredits: 1000, queryDailyLimit: 1000 });
  key = (await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest', 'query', 'memory.read', 'memory.write'], maxPreset: 'accuracy' })).secret;
  await say('dana', 'week', 'I bought a new car last week, a blue one.');
  for (const content of ['The weather was lovely on Sunday.', 'We watched a film about the sea.', 'My sister is learning the violin.']) {
    await say('dana', 'week', content);
  }
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await provider?.close();
  await db?.drop();
});

describe('semantic retrieval', () => {
  it('stores a message with its vector and the model that made it, sending the key and the texts to the provider', async () => {
    const rows = await bound<{ content: string; model: string | null; bytes: number | null }>(db.orm.em.fork(),
      sql`select content, embedding_model as model, octet_length(embedding) as bytes from memory_message order by created_at`);
    expect(rows.every((r) => r.model === MODEL && r.bytes === 64 * 4)).toBe(true);
    expect(provider.requests.some((r) => r.input.includes('I bought a new car last week, a blue one.'))).toBe(true);
    expect(provider.requests.every((r) => r.model === MODEL && r.authorization === 'Bearer sk-test-embeddings')).toBe(true);
  });

  it('accuracy finds by meaning what shares no word with the question; efficient (words only) does not', async () => {
    const accurate = await query('automobile purchase', 'accuracy');
    // The claim derived from the message leads its evidence, the message as its support.
    expect(accurate.evidence[0]).toMatchObject({ supports: [{ text: 'I bought a new car last week, a blue one.' }] });
    expect(accurate.limitations.map((l) => l.code)).not.toContain('semantic_unavailable');
    const efficient = await query('automobile purchase', 'efficient');
    expect(efficient.evidence).toEqual([]);
  });

  it('embeds source excerpts as they are built, and finds them by meaning', async () => {
    const r = await client.post('/v1/ingest/file', {
      as: { bearer: key },
      body: {
        filename: 'staff.md', contentType: 'text/markdown', dryRun: false, datedAt: '2026-11-01', idempotencyKey: `i-${randomUUID()}`,
        contentBase64: Buffer.from('# Staff\n\nThe clinic hired a new physician in October.\n').toString('base64'),
      },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    const job = await eventually(async () => {
      const j = (await client.get(`/v1/ingest/jobs/${r.body.job.id}`, { as: { bearer: key } })).body;
      return ['succeeded', 'failed', 'quarantined'].includes(j?.job?.status) ? j.job : null;
    }, 'job', 60_000);
    expect(job.status, JSON.stringify(job)).toBe('succeeded');
    const [excerpt] = await bound<{ model: string | null }>(db.orm.em.fork(), sql`select embedding_model as model from record where kind = 'excerpt' and text like '%physician%'`);
    expect(excerpt!.model).toBe(MODEL);
    expect((await query('doctor', 'accuracy')).evidence.map((e) => e.text).join(' ')).toContain('physician');
  });

  it('a write never waits on the provider: stored without a vector, found by its words; a query says it ranked by words', async () => {
    provider.setFailing(true);
    try {
      const id = await say('dana', 'later', 'My puppy is called Rex.');
      const [row] = await bound<{ embedding: Buffer | null }>(db.orm.em.fork(), sql`select embedding from memory_message where id = ${id}`);
      expect(row!.embedding).toBeNull();
      const r = await query('puppy Rex', 'accuracy');
      expect(JSON.stringify(r.evidence)).toContain('My puppy is called Rex.');
      expect(r.limitations.map((l: Json) => l.code)).toContain('semantic_unavailable');
    } finally {
      provider.setFailing(false);
    }
  });
});
