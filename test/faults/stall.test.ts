import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { freePort } from '../helpers/ephemeral.ts';
import { ApiClient, createKey, createTestAccount, signIn } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { activityRuns } from '../helpers/faults.ts';
import { flateBombPdf, nestedDivs } from '../helpers/hostile-files.ts';
import { kill, spawnApi, spawnWorker } from '../helpers/processes.ts';
import { testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// No tenant stalls another (issue 24). Account A submits pathological HTML (deeply nested divs), a
// Flate-bomb PDF and a flood of dry runs; account B meanwhile writes memory and ingests a small file.
// Real API and worker processes, the real Temporal server and PostgreSQL. A low CPU limit makes the
// nested HTML trip it here (at the default 60 s it is merely slow): what is asserted is the outcome.

const taskQueue = uniqueTaskQueue();
const temporal = testTemporalClient();
const LIMITS = { EXTRACTION_CPU_SECONDS: '3', EXTRACTION_MEMORY_MB: '768' };
let db: TestDatabase;
let api: ChildProcess;
let worker: ChildProcess;
let base: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const port = await freePort();
  api = await spawnApi(db.url, taskQueue, port, LIMITS);
  worker = spawnWorker(db.url, taskQueue, LIMITS);
  base = `http://127.0.0.1:${port}`;
}, 120_000);

afterAll(async () => {
  if (api) await kill(api);
  if (worker) await kill(worker);
  await temporal.close();
  await db?.drop();
});

async function keyFor(scopes: string[]) {
  const client = new ApiClient(base);
  const account = await createTestAccount(db.orm, { monthlyCredits: 10_000, ingestDailyLimit: 1000 });
  const cookie = await signIn(client, account);
  return { accountId: account.id, auth: { authorization: `Bearer ${(await createKey(client, { cookie }, { scopes })).secret}`, 'content-type': 'application/json' } };
}

const post = async (path: string, auth: Record<string, string>, body: unknown) => {
  const res = await fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> }; // eslint-disable-line @typescript-eslint/no-explicit-any
};

const fileBody = (filename: string, contentType: string, bytes: Buffer, live: boolean) => ({
  filename, contentType, contentBase64: bytes.toString('base64'),
  ...(live ? { dryRun: false, datedAt: '2026-11-24', idempotencyKey: `stall-${randomUUID()}` } : {}),
});

async function jobWhenDone(auth: Record<string, string>, jobId: string, timeoutMs = 240_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const job = ((await (await fetch(`${base}/v1/ingest/jobs/${jobId}`, { headers: auth })).json()) as { job: Record<string, any> }).job; // eslint-disable-line @typescript-eslint/no-explicit-any
    if (!['queued', 'running'].includes(job.status)) return job;
    if (Date.now() > deadline) throw new Error(`job ${jobId} still ${job.status}`);
    await sleep(200);
  }
}

describe('one account cannot stall another', () => {
  it('B\'s memory write and small ingest succeed while A\'s hostile jobs fail once on their limits, readiness stays 200, the worker never restarts', async () => {
    const a = await keyFor(['ingest']);
    const b = await keyFor(['ingest', 'memory.read', 'memory.write']);

    // Readiness, every 250 ms for the whole test.
    const readiness: number[] = [];
    let watching = true;
    const watcher = (async () => {
      while (watching) {
        readiness.push(await fetch(`${base}/readyz`).then((r) => r.status, () => 0));
        await sleep(250);
      }
    })();

    // A: two live pathological files, then a flood of dry runs.
    const html = await post('/v1/ingest/file', a.auth, fileBody('nested.html', 'text/html', nestedDivs(400_000), true));
    const pdf = await post('/v1/ingest/file', a.auth, fileBody('bomb.pdf', 'application/pdf', flateBombPdf(256), true));
    expect([html.status, pdf.status]).toEqual([202, 202]);
    const flood = Promise.all(Array.from({ length: 12 }, () => post('/v1/ingest/file', a.auth, fileBody('nested.html', 'text/html', nestedDivs(130_000), false))));

    // B, meanwhile: a memory write and a small file.
    await post('/v1/workspaces/default/peers', b.auth, { id: 'bea' });
    await post('/v1/workspaces/default/sessions', b.auth, { id: 'chat' });
    const write = await post('/v1/workspaces/default/sessions/chat/messages', b.auth, {
      peer_id: 'bea', messages: [{ role: 'user', content: 'My favourite mountain is Mount Rainier.' }],
    });
    expect(write.status).toBe(200);
    const small = await post('/v1/ingest/file', b.auth, fileBody('note.md', 'text/markdown', Buffer.from('# Note\n\nThe Kestrel launch moved to March 2027.\n'), true));
    expect(small.status).toBe(202);

    const eventId = write.body.event_id as string;
    let event: Record<string, unknown> = {};
    for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(200)) {
      event = (await (await fetch(`${base}/v1/workspaces/default/events/${eventId}`, { headers: b.auth })).json()) as Record<string, unknown>;
      if (event.status === 'succeeded' || event.status === 'failed') break;
    }
    expect(event.status).toBe('succeeded');
    expect((await jobWhenDone(b.auth, small.body.job.id)).status).toBe('succeeded');

    // A's flood: refused past the account's free-work limit (429), the rest answered; never a 5xx.
    const answers = await flood;
    for (const r of answers) expect([200, 400, 429], JSON.stringify(r.body).slice(0, 300)).toContain(r.status);
    expect(answers.filter((r) => r.status === 429).length).toBeGreaterThan(0);
    for (const r of answers.filter((x) => x.status === 429)) expect(r.body.error.code).toBe('rate_limited');

    // A's live jobs: failed, naming the limit, after one attempt each, not retryable.
    const htmlJob = await jobWhenDone(a.auth, html.body.job.id);
    expect(htmlJob).toMatchObject({ status: 'failed', attempts: 1, failure: { retryable: false, message: 'Extraction exceeded its time limit of 3 s of CPU.' } });
    const pdfJob = await jobWhenDone(a.auth, pdf.body.job.id);
    expect(pdfJob).toMatchObject({ status: 'failed', attempts: 1, failure: { retryable: false } });
    expect(pdfJob.failure.message).toMatch(/compressed streams inflate to more than 64 MB/);
    for (const job of [htmlJob, pdfJob]) {
      expect((await activityRuns(temporal.client.workflow.getHandle(ingestWorkflowId(job.id)))).buildIngestRecords).toMatchObject({ scheduled: 1, lastAttempt: 1 });
    }

    watching = false;
    await watcher;
    expect(readiness.length).toBeGreaterThan(10);
    expect(readiness.filter((s) => s !== 200)).toEqual([]);
    // The worker process that started is the one still running: no restart.
    expect(worker.exitCode).toBeNull();
    expect(worker.signalCode).toBeNull();
  }, 600_000);
});
