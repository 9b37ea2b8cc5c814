import { randomUUID } from 'node:crypto';
import { WorkflowFailedError } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bound, sql } from '../../platform/db/sql.ts';
import { migrationsList } from '../../platform/db/migrations/index.ts';
import { createOrm, migrate } from '../../platform/db/orm.ts';
import { runSelfCheck } from '../../temporal/starts.ts';
import { createTestDatabase, createTestDatabaseRaw, type TestDatabase } from '../helpers/db.ts';
import { memoryLogger, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

let db: TestDatabase;
let worker: Awaited<ReturnType<typeof startWorker>>;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
const workerLog = memoryLogger('info');

beforeAll(async () => {
  db = await createTestDatabase();
  worker = await startWorker({ orm: db.orm, taskQueue, logger: workerLog.logger });
});
afterAll(async () => {
  await worker?.stop();
  await temporal.close();
  await db?.drop();
});

describe('a workflow end to end: client -> Temporal server -> worker -> activity -> PostgreSQL', () => {
  it('runs the self-check and the activity writes its row', async () => {
    const checkId = randomUUID();
    const result = await runSelfCheck(temporal.client, taskQueue, { checkId, requestedBy: 'test' });
    expect(result).toMatchObject({ checkId: `selfcheck-${checkId}`, workerIdentity: worker.identity });

    const rows = await bound<{ requested_by: string; checked_at: Date }>(db.orm.em.fork(), sql`select requested_by, checked_at from self_check where id = ${result.checkId}`);
    expect(rows).toHaveLength(1);
    expect(rows[0]!.requested_by).toBe('test');
    expect(new Date(rows[0]!.checked_at).toISOString()).toBe(result.checkedAt);

    // The activity logging interceptor tags lines with the workflow, run, activity and attempt.
    const logged = workerLog.lines.map((l) => JSON.parse(l)).find((l) => l.msg === 'activity completed');
    expect(logged).toMatchObject({ workflowId: result.checkId, activity: 'recordSelfCheck', attempt: 1 });
    expect(logged.runId).toEqual(expect.any(String));
  });

  it('starting the same check twice yields one execution and one row', async () => {
    const checkId = randomUUID();
    const [a, b] = await Promise.all([
      runSelfCheck(temporal.client, taskQueue, { checkId, requestedBy: 'test' }),
      runSelfCheck(temporal.client, taskQueue, { checkId, requestedBy: 'test' }),
    ]);
    expect(a).toEqual(b);
    expect(await bound(db.orm.em.fork(), sql`select id from self_check where id = ${a.checkId}`)).toHaveLength(1);
  });

  it('fails (rather than hangs) when no worker polls the task queue', async () => {
    await expect(
      runSelfCheck(temporal.client, uniqueTaskQueue(), { checkId: randomUUID(), requestedBy: 'test', timeoutMs: 1500 }),
    ).rejects.toBeInstanceOf(WorkflowFailedError);
  });
});

describe('migrations', () => {
  it('are serialised: concurrent runs against one database apply each migration once', async () => {
    const fresh = await createTestDatabaseRaw();
    const orms = await Promise.all([1, 2, 3].map(() => createOrm(fresh.url)));
    try {
      const results = await Promise.all(orms.map((o) => migrate(o)));
      expect(results.flat().sort()).toEqual(migrationsList.map((m) => m.name).sort());
      const again = await migrate(orms[0]!);
      expect(again).toEqual([]);
    } finally {
      await Promise.all(orms.map((o) => o.close()));
      await fresh.drop();
    }
  });
});
