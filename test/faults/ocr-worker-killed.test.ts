import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { activityRuns, waitForRunningActivity } from '../helpers/faults.ts';
import { spawnWorker } from '../helpers/processes.ts';
import { proseLines, scannedPdf } from '../helpers/scanned-pdf.ts';
import { startApi, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// A worker SIGKILLed in the middle of live OCR: the activity is retried on another worker, the batch
// already stored is not recognised or billed again, the batch in flight is billed once, and the job
// ends with every page's records.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let key: string;
let accountId: string;
const workers: ChildProcess[] = [];
const sql = async <T>(text: string, params: unknown[]) => db.orm.em.fork().getConnection().execute<T[]>(text, params);
const count = async (text: string, params: unknown[]) => Number((await sql<{ n: string }>(text, params))[0]!.n);

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue, env: { INGEST_HEARTBEAT_TIMEOUT_SECONDS: '10' } });
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, { email: `o-${randomUUID()}@example.test`, password: 'a-long-enough-password' });
  accountId = a.id;
  ({ secret: key } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' }));
});
afterAll(async () => {
  for (const w of workers) w.kill('SIGKILL');
  await api?.close();
  await temporal.close();
  await db?.drop();
});

describe('a worker killed during live OCR', () => {
  it('is replaced; every page is billed once and the job ends with records citing each page', { timeout: 300_000 }, async () => {
    // Six scanned pages: two batches (4 + 2).
    const pdf = await scannedPdf([1, 2, 3, 4, 5, 6].map(proseLines));
    const first = spawnWorker(db.url, taskQueue);
    workers.push(first);
    const res = await fetch(`${api.baseUrl}/v1/ingest/file`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ filename: 'scan.pdf', contentType: 'application/pdf', contentBase64: pdf.toString('base64'), dryRun: false, datedAt: '2026-11-01', idempotencyKey: `kill-${randomUUID()}` }),
    });
    expect(res.status).toBe(202);
    const jobId = ((await res.json()) as { job: { id: string } }).job.id;
    const handle = temporal.client.workflow.getHandle(ingestWorkflowId(jobId));
    await waitForRunningActivity(handle, 'recogniseIngestPages', 120_000);

    // Killed once the first batch is stored and billed and the second is reserved (its OCR under way).
    await expect.poll(() => count('select count(*) as n from credit_reservation where account_id = ?', [accountId]), { timeout: 120_000, interval: 100 }).toBe(2);
    expect(await count('select count(*) as n from ocr_page where owner_id = ?', [jobId])).toBe(4);
    first.kill('SIGKILL');

    workers.push(spawnWorker(db.url, taskQueue));
    await expect.poll(async () => (await sql<{ status: string }>('select status from ingest_job where id = ?', [jobId]))[0]!.status, { timeout: 180_000, interval: 500 }).toBe('succeeded');

    const runs = await activityRuns(handle);
    expect(runs.recogniseIngestPages!.lastAttempt).toBeGreaterThanOrEqual(2);
    const ledger = await sql<{ reservation_id: string; kind: string; amount: number }>(
      `select reservation_id, kind, amount from credit_ledger where account_id = ? and kind in ('reserve', 'charge', 'refund') order by id`, [accountId]);
    const charges = ledger.filter((l) => l.kind === 'charge');
    expect(charges.map((c) => c.amount).sort()).toEqual([2, 4]);
    expect(new Set(charges.map((c) => c.reservation_id)).size).toBe(2);
    expect(ledger.filter((l) => l.kind === 'reserve')).toHaveLength(2);
    expect(ledger.filter((l) => l.kind === 'refund' && l.amount > 0)).toEqual([]);
    const pages = await sql<{ page: number }>('select distinct page from record where source_id = ? order by page', [jobId]);
    expect(pages.map((p) => p.page)).toEqual([1, 2, 3, 4, 5, 6]);
  });
});
