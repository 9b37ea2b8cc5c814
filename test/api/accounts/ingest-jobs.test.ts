import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  cliSignIn,
  createKey,
  createTestAccount,
  expectError,
  signIn,
  sqlClient,
  type Json,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';

// Ingest job reads (spec 2.2 Job and job list, 4.3 GET /v1/ingest/jobs[/{jobId}], 8 limit 1..100):
// keyset pagination, and one account never sees another's jobs. Jobs are inserted directly (ingest
// itself is not under test here).

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
let alice: TestAccount;
let bob: TestAccount;
let aliceKey: string;
let aliceCli: string;
let bobKey: string;
const temporal = testTemporalClient();

type JobSeed = { id: string; accountId: string; createdAt: string; kind: string; status: string };
const seeded: JobSeed[] = [];

async function insertJob(j: JobSeed & { failure?: Json; attempts?: number; completedAt?: string | null }) {
  await sql.query(
    `insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, attempts, failure, created_at, completed_at)
     values ($1, $2, $3, $4, $5, 'secret-request-hash', $6, $7, $8, $9)`,
    [j.id, j.accountId, j.kind, j.status, `idem-${j.id}`, j.attempts ?? 0, j.failure ?? null, j.createdAt, j.completedAt ?? null],
  );
  seeded.push(j);
}

/** Alice's jobs as the API must order them: newest first, ties broken by id descending. */
const expectedOrder = (accountId: string) =>
  seeded
    .filter((j) => j.accountId === accountId)
    .sort((a, b) => Date.parse(b.createdAt) - Date.parse(a.createdAt) || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((j) => j.id);

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
  alice = await createTestAccount(db.orm);
  bob = await createTestAccount(db.orm);
  const aliceCookie = await signIn(client, alice);
  aliceKey = (await createKey(client, { cookie: aliceCookie }, { scopes: ['ingest'] })).secret;
  aliceCli = await cliSignIn(client, aliceCookie);
  bobKey = (await createKey(client, { cookie: await signIn(client, bob) }, { scopes: ['ingest'] })).secret;

  // 23 jobs for Alice over distinct times, three of them sharing one timestamp (ties by id), and 6 for
  // Bob interleaved in time.
  const base = Date.parse('2026-01-10T12:00:00.000Z');
  for (let i = 0; i < 20; i++) {
    await insertJob({
      id: randomUUID(),
      accountId: alice.id,
      createdAt: new Date(base + i * 60_000).toISOString(),
      kind: i % 3 === 0 ? 'source_deletion' : 'url',
      status: i % 2 === 0 ? 'succeeded' : 'queued',
      completedAt: i % 2 === 0 ? new Date(base + i * 60_000 + 5000).toISOString() : null,
    });
  }
  const tie = new Date(base + 7 * 60_000 + 30_000).toISOString();
  for (let i = 0; i < 3; i++) {
    await insertJob({ id: randomUUID(), accountId: alice.id, createdAt: tie, kind: 'url', status: 'queued' });
  }
  for (let i = 0; i < 6; i++) {
    await insertJob({
      id: randomUUID(),
      accountId: bob.id,
      createdAt: new Date(base + i * 90_000 + 1000).toISOString(),
      kind: 'url',
      status: 'queued',
    });
  }
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

async function walk(bearer: string, limit: number) {
  const pages: Json[] = [];
  let cursor: string | null = null;
  do {
    const q: string = `limit=${limit}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`;
    const res = await client.get(`/v1/ingest/jobs?${q}`, { as: { bearer } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    pages.push(res.body);
    cursor = res.body.pagination.nextCursor;
    expect(pages.length).toBeLessThan(50);
  } while (cursor);
  return pages;
}

describe('GET /v1/ingest/jobs', () => {
  it('walks every page with limit, returned, hasMore and nextCursor, newest first, each job once', async () => {
    const expected = expectedOrder(alice.id);
    expect(expected).toHaveLength(23);
    const pages = await walk(aliceKey, 5);
    expect(pages).toHaveLength(5);
    pages.forEach((page, i) => {
      const last = i === pages.length - 1;
      expect(page.schemaVersion).toBe('service-ingest-job-list-v1');
      expect(page.pagination).toEqual({
        limit: 5,
        returned: last ? 3 : 5,
        hasMore: !last,
        nextCursor: last ? null : expect.any(String),
      });
      expect(page.jobs).toHaveLength(page.pagination.returned);
    });
    expect(pages.flatMap((p) => p.jobs.map((j: Json) => j.id))).toEqual(expected);
  });

  it('pages of one job at a time still return every job once (ties on createdAt included)', async () => {
    const pages = await walk(aliceKey, 1);
    expect(pages.flatMap((p) => p.jobs.map((j: Json) => j.id))).toEqual(expectedOrder(alice.id));
  });

  it('an exact final page has hasMore false and no cursor', async () => {
    const pages = await walk(aliceKey, 23);
    expect(pages).toHaveLength(1);
    expect(pages[0].pagination).toEqual({ limit: 23, returned: 23, hasMore: false, nextCursor: null });
  });

  it('defaults to limit 20 and accepts 1 and 100', async () => {
    const res = await client.get('/v1/ingest/jobs', { as: { bearer: aliceKey } });
    expect(res.status).toBe(200);
    expect(res.body.pagination).toEqual({ limit: 20, returned: 20, hasMore: true, nextCursor: expect.any(String) });
    const all = await client.get('/v1/ingest/jobs?limit=100', { as: { bearer: aliceKey } });
    expect(all.body.pagination).toEqual({ limit: 100, returned: 23, hasMore: false, nextCursor: null });
    expect((await client.get('/v1/ingest/jobs?limit=1', { as: { bearer: aliceKey } })).body.jobs).toHaveLength(1);
  });

  it('never shows another account its jobs, on any page', async () => {
    const aliceIds = new Set(expectedOrder(alice.id));
    const bobIds = new Set(expectedOrder(bob.id));
    const alicePages = await walk(aliceKey, 4);
    for (const j of alicePages.flatMap((p) => p.jobs)) expect(bobIds.has(j.id)).toBe(false);
    const bobPages = await walk(bobKey, 4);
    const bobSeen = bobPages.flatMap((p) => p.jobs.map((j: Json) => j.id));
    expect(bobSeen).toEqual(expectedOrder(bob.id));
    for (const id of bobSeen) expect(aliceIds.has(id)).toBe(false);
    // A cursor from Alice's listing does not open Alice's jobs to Bob.
    const cursor = alicePages[0].pagination.nextCursor;
    const res = await client.get(`/v1/ingest/jobs?limit=100&cursor=${encodeURIComponent(cursor)}`, { as: { bearer: bobKey } });
    expect(res.status).toBe(200);
    for (const j of res.body.jobs) expect(bobIds.has(j.id)).toBe(true);
  });

  it('the CLI token reads the same list as an ingest key', async () => {
    const res = await client.get('/v1/ingest/jobs?limit=100', { as: { bearer: aliceCli } });
    expect(res.status).toBe(200);
    expect(res.body.jobs.map((j: Json) => j.id)).toEqual(expectedOrder(alice.id));
  });

  it('rejects limits 0, 101, 2.5 and abc, a malformed cursor and unknown parameters with 400', async () => {
    for (const q of ['limit=0', 'limit=101', 'limit=2.5', 'limit=abc', 'cursor=bm90LWEtY3Vyc29y', 'cursor=%25%25', 'page=2']) {
      const res = await client.get(`/v1/ingest/jobs?${q}`, { as: { bearer: aliceKey } });
      expect(res.status, q).toBe(400);
      expectError(res, 400, 'validation_error');
    }
  });

  it('shows only public job fields', async () => {
    const res = await client.get('/v1/ingest/jobs?limit=100', { as: { bearer: aliceKey } });
    for (const j of res.body.jobs) {
      expect(Object.keys(j).sort()).toEqual(['attempts', 'completedAt', 'createdAt', 'failure', 'filename', 'id', 'kind', 'queuePosition', 'records', 'sourceId', 'sourceUrl', 'startedAt', 'status', 'title']);
    }
    expect(JSON.stringify(res.body)).not.toContain('secret-request-hash');
    expect(JSON.stringify(res.body)).not.toContain('idem-');
  });
});

describe('GET /v1/ingest/jobs/:jobId', () => {
  it('answers the job response for an own job', async () => {
    const id = randomUUID();
    const failure = { message: 'The page could not be fetched.', retryable: true, failedAt: '2026-01-11T08:00:00.000Z' };
    await insertJob({
      id,
      accountId: alice.id,
      createdAt: '2026-01-11T07:59:00.000Z',
      kind: 'url',
      status: 'failed',
      attempts: 3,
      failure,
      completedAt: '2026-01-11T08:00:00.000Z',
    });
    const res = await client.get(`/v1/ingest/jobs/${id}`, { as: { bearer: aliceKey } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      schemaVersion: 'service-ingest-job-v1',
      job: {
        id,
        kind: 'url',
        status: 'failed',
        attempts: 3,
        failure,
        createdAt: '2026-01-11T07:59:00.000Z',
        completedAt: '2026-01-11T08:00:00.000Z',
        startedAt: null,
        queuePosition: null,
        sourceUrl: null,
        filename: null,
        title: null,
        sourceId: null,
        records: null,
      },
    });
    const cli = await client.get(`/v1/ingest/jobs/${id}`, { as: { bearer: aliceCli } });
    expect(cli.body).toEqual(res.body);
  });

  it("another account's job is 404, like a missing one; a malformed id is 400", async () => {
    const bobJob = expectedOrder(bob.id)[0]!;
    expect((await client.get(`/v1/ingest/jobs/${bobJob}`, { as: { bearer: bobKey } })).status).toBe(200);
    const foreign = await client.get(`/v1/ingest/jobs/${bobJob}`, { as: { bearer: aliceKey } });
    expectError(foreign, 404, 'not_found');
    const missing = await client.get(`/v1/ingest/jobs/${randomUUID()}`, { as: { bearer: aliceKey } });
    expectError(missing, 404, 'not_found');
    expect(foreign.body.error.message).toBe(missing.body.error.message);
    expectError(await client.get(`/v1/ingest/jobs/${bobJob}`, { as: { bearer: aliceCli } }), 404, 'not_found');
    expectError(await client.get('/v1/ingest/jobs/not-a-uuid', { as: { bearer: aliceKey } }), 400, 'validation_error');
  });
});
