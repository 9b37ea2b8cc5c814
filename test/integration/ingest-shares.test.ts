import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bound, sql } from '../../platform/db/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { nestedDivs } from '../helpers/hostile-files.ts';
import { ingestAccount, submitFile } from '../helpers/ingest-load.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// A share per account (issue 39): with two ingest slots, one account's large builds hold at most one,
// so another account's small file (and its own) never waits for them; the large jobs that yield still
// end in one attempt each.

let db: TestDatabase;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  const taskQueue = uniqueTaskQueue();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue, slots: { ingest: 2 }, env: { EXTRACTION_PROCESSES: '2', INGEST_LARGE_BYTES: '10000' } });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

const one = async <T>(q: ReturnType<typeof sql>) => (await bound<T>(db.orm.em.fork(), q))[0]!;

describe('ingest slots shared between accounts', () => {
  it('one account\'s large builds hold at most all slots but one; the small files of others and its own go through', async () => {
    const a = await ingestAccount(db.orm);
    const b = await ingestAccount(db.orm);
    const large: string[] = [];
    for (let i = 0; i < 6; i++) large.push(await submitFile(api.baseUrl, a, { filename: `a-${i}.html`, contentType: 'text/html', bytes: nestedDivs(40_000) }));
    // Building now: A's large jobs started and not ended. Sampled until they all end, and never above one.
    const building = async () => Number((await one<{ n: string }>(sql`select count(*) as n from ingest_job
      where id = any(${large}) and started_at is not null and status = 'queued'`)).n);
    let most = 0;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        most = Math.max(most, await building());
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    await expect.poll(building, { timeout: 60_000 }).toBeGreaterThan(0);
    const small = Buffer.from('# Note\n\nThe Kestrel launch moved to March 2027.');
    const bJob = await submitFile(api.baseUrl, b, { filename: 'b.md', contentType: 'text/markdown', bytes: small });
    const aSmall = await submitFile(api.baseUrl, a, { filename: 'a-small.md', contentType: 'text/markdown', bytes: small });
    const ended = (ids: string[]) => one<{ n: string }>(sql`select count(*) as n from ingest_job where id = any(${ids}) and status in ('succeeded', 'failed')`).then((r) => Number(r.n));
    await expect.poll(() => ended([bJob, aSmall]), { timeout: 120_000, interval: 100 }).toBe(2);
    await expect.poll(() => ended(large), { timeout: 300_000, interval: 250 }).toBe(large.length);
    sampling = false;
    await sampler;
    expect(most).toBe(1);
    const jobs = await bound<{ status: string; attempts: number }>(db.orm.em.fork(), sql`select status, attempts from ingest_job where id = any(${[...large, bJob, aSmall]})`);
    expect(jobs.every((j) => j.status === 'succeeded' && j.attempts === 1), JSON.stringify(jobs)).toBe(true);
  }, 400_000);
});
