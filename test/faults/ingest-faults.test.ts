import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { freePort } from '../helpers/ephemeral.ts';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { waitForRunningActivity } from '../helpers/faults.ts';
import { kill, spawnApi, spawnWorker } from '../helpers/processes.ts';
import { testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Faults around ingest other than a killed worker (see ingest-worker-killed.test.ts): PostgreSQL
// connections cut while the build activity runs, and the API process killed while a client's upload is
// in flight, the client then retrying with the same idempotency key. Each case checks the final state.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let accountId: string;
let key: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, { email: `f-${randomUUID()}@example.test`, password: 'a-long-enough-password' });
  accountId = a.id;
  ({ secret: key } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' }));
  children.push(spawnWorker(db.url, taskQueue));
});
afterAll(async () => {
  for (const c of children) await kill(c);
  await temporal.close();
  await db?.drop();
});

const markdown = (n: number) => `# Field notes\n\n${Array.from({ length: n }, (_, i) =>
  `## Section ${i}\n\nProject Kestrel${i} was founded in ${1900 + (i % 120)} by Ada Lovelace${i} in Orlavik${i}. ` +
  `Its harbour code is harbor${i}x and it studies ${i} migrating terns.\n`).join('\n')}`;

function upload(baseUrl: string, idempotencyKey: string, text: string) {
  return fetch(`${baseUrl}/v1/ingest/file`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      filename: 'notes.md', contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'),
      dryRun: false, datedAt: '2026-11-01', idempotencyKey,
    }),
  });
}

const sql = <T>(text: string, params: unknown[] = []) => db.orm.em.fork().getConnection().execute<T[]>(text, params);
const jobsWithKey = (k: string) => sql<{ id: string; status: string; attempts: number }>(
  'select id, status, attempts from ingest_job where account_id = ? and idempotency_key = ?', [accountId, k]);
const recordCount = async (id: string) => Number((await sql<{ n: string }>('select count(*) as n from record where source_id = ?', [id]))[0]!.n);
const ingestUsed = async () => Number((await sql<{ n: string | null }>(
  `select sum(used) as n from quota_usage where account_id = ? and metric = 'ingest' and period = 'day'`, [accountId]))[0]!.n ?? 0);

async function waitForStatus(id: string, timeout = 120_000) {
  await expect.poll(async () => (await sql<{ status: string }>('select status from ingest_job where id = ?', [id]).catch(() => []))[0]?.status,
    { timeout, interval: 250 }).not.toBe('queued');
}

describe('PostgreSQL connections dropped while the build activity runs', () => {
  it('the activity is retried and the job ends with exactly one set of records', { timeout: 240_000 }, async () => {
    const port = await freePort();
    const api = await spawnApi(db.url, taskQueue, port);
    children.push(api);
    const k = `pgdrop-${randomUUID()}`;
    expect((await upload(`http://127.0.0.1:${port}`, k, markdown(3000))).status).toBe(202);
    const [job] = await jobsWithKey(k);

    const handle = temporal.client.workflow.getHandle(ingestWorkflowId(job!.id));
    await waitForRunningActivity(handle, 'buildIngestRecords');
    // Every other session of this database: the worker's, the api's and our own pool's idle ones.
    const cut = await sql<{ ok: boolean }>(
      'select pg_terminate_backend(pid) as ok from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()');
    expect(cut.length).toBeGreaterThan(0);

    await waitForStatus(job!.id);
    const [after] = await jobsWithKey(k);
    expect(after!.status).toBe('succeeded');
    const n = await recordCount(job!.id);
    expect(n).toBeGreaterThan(3000);
    // Exactly one set: every record id is distinct and the count matches an uninterrupted run.
    const clean = `clean-${randomUUID()}`;
    expect((await upload(`http://127.0.0.1:${port}`, clean, markdown(3000))).status).toBe(202);
    const [cleanJob] = await jobsWithKey(clean);
    await waitForStatus(cleanJob!.id);
    expect(await recordCount(cleanJob!.id)).toBe(n);
    // Both processes survived the cut: the api still answers.
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
  });
});

describe('the API killed while an upload is in flight', () => {
  it('a retry with the same idempotency key yields one job, one quota unit and one set of records', { timeout: 240_000 }, async () => {
    const port = await freePort();
    const base = `http://127.0.0.1:${port}`;
    const first = await spawnApi(db.url, taskQueue, port);
    children.push(first);
    const k = `apikill-${randomUUID()}`;
    const text = markdown(40_000); // a few MB: the request is still being handled when the process dies
    const used0 = await ingestUsed();

    const inFlight = upload(base, k, text).then((r) => r.status, () => 'connection lost');
    await new Promise((r) => setTimeout(r, 150));
    await kill(first);
    const outcome = await inFlight;

    const second = await spawnApi(db.url, taskQueue, port);
    children.push(second);
    const retry = await upload(base, k, text);
    // 202 when the first attempt never committed, 200 (created false) when it did.
    expect([200, 202]).toContain(retry.status);
    const body = (await retry.json()) as { created: boolean; job: { id: string } };
    expect(body.created).toBe(retry.status === 202);

    const jobs = await jobsWithKey(k);
    expect(jobs).toHaveLength(1);
    expect(jobs[0]!.id).toBe(body.job.id);
    expect(await ingestUsed()).toBe(used0 + 1);
    await waitForStatus(body.job.id);
    expect((await jobsWithKey(k))[0]!.status).toBe('succeeded');
    expect(await recordCount(body.job.id)).toBeGreaterThan(40_000);
    // Reported for the log: whether the kill landed before or after the first attempt committed.
    console.info(`first attempt: ${outcome}; retry: ${retry.status}`);
  });
});
