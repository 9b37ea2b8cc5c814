import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bound, sql } from '../../platform/db/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nestedDivs } from '../helpers/hostile-files.ts';
import { ingestAccount, submitFile } from '../helpers/ingest-load.ts';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Fair across accounts (issue 24): ingest workflows carry their account as the Temporal fairness key,
// and the dev server dispatches a backlogged queue round-robin across keys. With one ingest slot, a job
// of account B submitted behind eight of account A runs next, not ninth.

let db: TestDatabase;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  const taskQueue = uniqueTaskQueue();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue, slots: { ingest: 1 }, env: { EXTRACTION_PROCESSES: '1' } });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

/** Whether the job's workflow has scheduled its build activity: the job is then in the queue's backlog. */
async function buildScheduled(jobId: string): Promise<boolean> {
  const history = await temporal.client.workflow.getHandle(ingestWorkflowId(jobId)).fetchHistory();
  return (history.events ?? []).some((e) => e.activityTaskScheduledEventAttributes);
}

describe('ingest across accounts', () => {
  it('dispatches a backlog round-robin across accounts: B\'s one job does not wait behind A\'s eight', async () => {
    const a = await ingestAccount(db.orm);
    const b = await ingestAccount(db.orm);
    const slow = nestedDivs(40_000);
    const aJobs: string[] = [];
    for (let i = 0; i < 8; i++) aJobs.push(await submitFile(api.baseUrl, a, { filename: `a-${i}.html`, contentType: 'text/html', bytes: slow }));
    const started = async () => Number((await bound<{ n: string }>(db.orm.em.fork(), sql`select count(*) as n from ingest_job where id = any(${aJobs}) and attempts > 0`))[0]!.n);
    // A's first job runs and the rest wait in the ingest queue's backlog, their build activities scheduled.
    await expect.poll(started, { timeout: 60_000 }).toBeGreaterThan(0);
    for (const id of aJobs) await expect.poll(() => buildScheduled(id), { timeout: 60_000 }).toBe(true);
    // While they wait, each job says its place in the account's line, read in one snapshot: the started
    // ones have startedAt (their status stays queued, as the contract lists), the waiting ones count 1, 2, ...
    const listed = await fetch(`${api.baseUrl}/v1/ingest/jobs?limit=20`, { headers: a });
    const jobs = ((await listed.json()) as { jobs: { id: string; status: string; startedAt: string | null; queuePosition: number | null }[] }).jobs.reverse();
    const waiting = jobs.filter((j) => j.status === 'queued' && !j.startedAt);
    expect(waiting.length).toBeGreaterThan(0);
    expect(waiting.map((j) => j.queuePosition)).toEqual(waiting.map((_, i) => i + 1));
    expect(jobs.filter((j) => j.startedAt).every((j) => j.queuePosition === null)).toBe(true);
    expect(jobs.some((j) => j.startedAt)).toBe(true);
    const bJob = await submitFile(api.baseUrl, b, { filename: 'b.md', contentType: 'text/markdown', bytes: Buffer.from('# B\n\nThe Kestrel launch moved to March 2027.') });
    // B joins the backlog when its workflow task has scheduled its build; on a loaded machine A's jobs
    // may have moved on by then, so the count is taken at that moment rather than at submission.
    await expect.poll(() => buildScheduled(bJob), { timeout: 60_000 }).toBe(true);
    const aheadOfB = await started();
    expect(aheadOfB, "the test needs A's backlog still waiting when B arrives").toBeLessThan(aJobs.length - 1);

    const all = [...aJobs, bJob];
    await expect.poll(async () => (await bound<{ n: string }>(db.orm.em.fork(), sql`select count(*) as n from ingest_job where id = any(${all}) and status in ('succeeded', 'failed')`))[0]!.n,
      { timeout: 300_000, interval: 250 }).toBe(String(all.length));
    const order = (await bound<{ id: string }>(db.orm.em.fork(), sql`select id from ingest_job where id = any(${all}) order by completed_at, id`)).map((r) => r.id);
    // First come, first served would finish B's job ninth; round-robin by account runs it right after
    // the jobs of A already started when B arrived (allowing one more of A's for a task already handed
    // to the worker).
    expect(order.indexOf(bJob)).toBeLessThanOrEqual(aheadOfB + 1);
  }, 400_000);
});
