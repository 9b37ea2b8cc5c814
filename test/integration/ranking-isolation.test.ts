import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { ApiClient, createTestAccount, sqlClient, type Json, type Sql } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Ranking scores are part of every query result, so they must not carry anything of other accounts:
// one account's scores for the same query over the same data stay the same whatever another account
// stores (issue 26: a deployment-wide record count in the idf made them reveal the deployment's size).

let db: TestDatabase;
let sql: Sql;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let client: ApiClient;

async function keyOf(): Promise<string> {
  const a = await createTestAccount(db.orm, { monthlyCredits: 1000, queryDailyLimit: 1000, ingestDailyLimit: 1000 });
  return (await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest', 'query'], maxPreset: 'accuracy', audiences: null })).secret;
}

async function ingest(key: string, text: string): Promise<void> {
  const r = await client.post('/v1/ingest/file', {
    as: { bearer: key },
    body: { filename: 'doc.md', contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'), dryRun: false, datedAt: '2026-11-01', idempotencyKey: `i-${randomUUID()}` },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  for (let i = 0; i < 600; i++) {
    const status = (await client.get(`/v1/ingest/jobs/${r.body.job.id}`, { as: { bearer: key } })).body.job.status;
    if (status === 'succeeded') return;
    if (status !== 'queued') throw new Error(`ingest ended ${status}`);
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error('ingest did not finish');
}

const scores = async (key: string) => {
  const r = await client.post('/v1/query', {
    as: { bearer: key },
    body: { idempotencyKey: `q-${randomUUID()}`, mode: 'evidence', preset: 'accuracy', query: 'Which harbour town hosts the tern survey?' },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return (r.body.evidence as Json[]).map((e) => ({ text: e.text as string, score: e.score as number }));
};

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  client = new ApiClient(api.baseUrl);
}, 120_000);
afterAll(async () => {
  vi.useRealTimers();
  await worker?.stop();
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

describe('ranking scores', () => {
  // Fails on main at f7e229e: core/retrieval/retrieve.ts takes the idf's corpus size from pg_class
  // (every account's records). Issue 23 moves those statistics per account; then this becomes `it`.
  it("do not depend on another account's data", async () => {
    const a = await keyOf();
    await ingest(a, [
      '# Tern survey', '',
      'The tern survey is hosted by the harbour town of Orlavik every June.', '',
      'Volunteers count nesting terns on the breakwater and the two islets.', '',
      'The harbour master keeps the survey boats ready in the old slipway.', '',
    ].join('\n'));
    await sql.query('analyze record');
    const before = await scores(a);
    expect(before.length).toBeGreaterThan(0);

    // Another account stores thousands of records, some sharing the query's words.
    const b = await keyOf();
    const paragraphs = Array.from({ length: 2400 }, (_, i) => `Paragraph ${i} of the ledger notes that harbour fees rose by ${i % 17} crowns in spring.`);
    await ingest(b, `# Ledger\n\n${paragraphs.join('\n\n')}\n`);
    await sql.query('analyze record');
    // Past every process-level statistics cache (one minute), as a later query would be.
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 120_000);
    const after = await scores(a);
    vi.useRealTimers();
    expect(after).toEqual(before);
  }, 300_000);
});
