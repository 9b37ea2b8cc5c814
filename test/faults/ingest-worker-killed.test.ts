import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { waitForRunningActivity } from '../helpers/faults.ts';
import { spawnWorker } from '../helpers/processes.ts';
import { startApi, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let key: string;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue, env: { INGEST_HEARTBEAT_TIMEOUT_SECONDS: '10' } });
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, { email: `c-${randomUUID()}@example.test`, password: 'a-long-enough-password' });
  ({ secret: key } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' }));
});
afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await api?.close();
  await temporal.close();
  await db?.drop();
});

// A document large enough that building its records takes a while.
const sections = Array.from({ length: 3000 }, (_, i) =>
  `## Section ${i}\n\nProject Kestrel${i} was founded in ${1900 + (i % 120)} by Ada Lovelace${i} in the town of Orlavik${i}. ` +
  `The harbour code of project Kestrel${i} is harbor${i}x. It studies ${i} migrating terns every spring.\n`,
);
const markdown = `# Field notes\n\n${sections.join('\n')}`;

async function submit(idempotencyKey: string) {
  const res = await fetch(`${api.baseUrl}/v1/ingest/file`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      filename: 'notes.md', contentType: 'text/markdown', contentBase64: Buffer.from(markdown).toString('base64'),
      dryRun: false, datedAt: '2026-11-01', idempotencyKey,
    }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { job: { id: string } }).job.id;
}

async function jobRow(id: string) {
  const [row] = await db.orm.em.fork().getConnection().execute<{ status: string; attempts: number; failure: unknown }[]>(
    'select status, attempts, failure from ingest_job where id = ?', [id]);
  return row!;
}

const recordCount = async (id: string) =>
  Number((await db.orm.em.fork().getConnection().execute<{ n: string }[]>('select count(*) as n from record where source_id = ?', [id]))[0]!.n);

describe('a worker killed in the middle of an ingest job', () => {
  it('is replaced, and the job still ends with exactly one set of records', { timeout: 300_000 }, async () => {
    const first = spawnWorker(db.url, taskQueue);
    workers.push(first);
    const crashed = await submit(`crash-${randomUUID()}`);

    // Wait until the record-building activity is running on the first worker, then kill it hard.
    const handle = temporal.client.workflow.getHandle(ingestWorkflowId(crashed));
    await waitForRunningActivity(handle, 'buildIngestRecords');
    first.kill('SIGKILL');
    expect((await jobRow(crashed)).status).toBe('queued');

    workers.push(spawnWorker(db.url, taskQueue));
    await expect.poll(async () => (await jobRow(crashed)).status, { timeout: 120_000, interval: 500 }).not.toBe('queued');
    expect(await jobRow(crashed)).toMatchObject({ status: 'succeeded' });
    expect((await jobRow(crashed)).attempts).toBeGreaterThanOrEqual(2); // the build really ran twice

    // The same document processed without interruption gives the same set.
    const clean = await submit(`clean-${randomUUID()}`);
    await expect.poll(async () => (await jobRow(clean)).status, { timeout: 120_000, interval: 500 }).toBe('succeeded');
    const n = await recordCount(clean);
    expect(n).toBeGreaterThan(3000);
    expect(await recordCount(crashed)).toBe(n);
  });
});
