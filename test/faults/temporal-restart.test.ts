import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { freePort } from '../helpers/ephemeral.ts';
import { createTemporalClient, type TemporalClientHandle } from '../../temporal/client.ts';
import { resolveTemporalCli } from '../../runners/temporal-server/cli.ts';
import { startTemporalDevServer, type DevServer } from '../../runners/temporal-server/dev-server.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { kill, spawnWorker } from '../helpers/processes.ts';
import { startApi, uniqueTaskQueue } from '../helpers/services.ts';

// The Temporal server itself dies (SIGKILL) while ingest jobs are in flight and comes back on the same
// address with its persisted state (the SQLite file `npm start` uses too). Every job must still end,
// once, with one set of records.

let db: TestDatabase;
let dir: string;
let server: DevServer;
let temporal: TemporalClientHandle;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: ChildProcess;
let key: string;
const taskQueue = uniqueTaskQueue();
let serverOptions: Parameters<typeof startTemporalDevServer>[0];

beforeAll(async () => {
  db = await createTestDatabase();
  dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-temporal-restart-'));
  serverOptions = {
    cli: await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI }),
    dbFile: path.join(dir, 'temporal.sqlite'),
    ip: '127.0.0.1',
    port: await freePort(),
    uiPort: await freePort(),
    namespace: 'default',
  };
  server = await startTemporalDevServer(serverOptions);
  temporal = createTemporalClient(server.address, 'default');
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = spawnWorker(db.url, taskQueue, { TEMPORAL_ADDRESS: server.address });
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, { email: `t-${randomUUID()}@example.test`, password: 'a-long-enough-password' });
  ({ secret: key } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' }));
});
afterAll(async () => {
  if (worker) await kill(worker);
  await api?.close();
  await temporal?.close();
  await server?.stop();
  await db?.drop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const doc = (i: number) => `# Notes ${i}\n\n${Array.from({ length: 800 }, (_, j) =>
  `Station Vega${i}x${j} recorded ${j} storms in ${1950 + (j % 70)}; its keeper was Ines Morales${j}.`).join('\n\n')}`;

const sql = <T>(text: string, params: unknown[] = []) => db.orm.em.fork().getConnection().execute<T[]>(text, params);

describe('the Temporal server killed and restarted with its persisted state', () => {
  it('finishes every in-flight ingest job exactly once', { timeout: 300_000 }, async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await fetch(`${api.baseUrl}/v1/ingest/file`, {
        method: 'POST',
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify({ filename: `n${i}.md`, contentType: 'text/markdown', contentBase64: Buffer.from(doc(i)).toString('base64'),
          dryRun: false, datedAt: '2026-11-01', idempotencyKey: `restart-${i}-${randomUUID()}` }),
      });
      expect(res.status).toBe(202);
      ids.push(((await res.json()) as { job: { id: string } }).job.id);
    }
    // Kill the server while (at least some of) the jobs are still queued.
    const queuedAtKill = (await sql<{ n: string }>(`select count(*) as n from ingest_job where id in (?) and status = 'queued'`, [ids]))[0]!.n;
    const gone = new Promise<void>((resolve) => server.process.once('exit', () => resolve()));
    server.process.kill('SIGKILL');
    await gone;
    await new Promise((r) => setTimeout(r, 2000));
    server = await startTemporalDevServer(serverOptions);

    await expect.poll(async () => Number((await sql<{ n: string }>(
      `select count(*) as n from ingest_job where id in (?) and status = 'queued'`, [ids]))[0]!.n), { timeout: 240_000, interval: 500 }).toBe(0);
    const rows = await sql<{ id: string; status: string }>('select id, status from ingest_job where id in (?)', [ids]);
    expect(rows.map((r) => r.status)).toEqual(ids.map(() => 'succeeded'));
    // One set of records each: the same count for documents of the same shape, no duplicate spans.
    const counts = await sql<{ source_id: string; n: string; spans: string }>(
      `select source_id, count(*) as n, count(distinct (kind, start_offset, end_offset, link_to)) as spans
         from record where source_id in (?) group by source_id`, [ids]);
    expect(counts).toHaveLength(ids.length);
    for (const c of counts) expect(c.n).toBe(c.spans);
    console.info(`jobs still queued when the server was killed: ${queuedAtKill} of ${ids.length}`);
  });
});
