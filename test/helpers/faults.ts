import type { WorkflowHandle } from '@temporalio/client';
import pg from 'pg';
import { expect } from 'vitest';

// Deterministic "in the middle" for fault tests: the test holds a row lock in its own transaction, so
// a worker's step blocks at a known statement; the test sees the worker's backend wait on it, kills the
// worker there and only then lets go. No sleeps, no racing the worker.

export type RowLock = {
  /** Waits until another backend is blocked by this lock; returns that backend's current statement. */
  waiter(timeoutMs?: number): Promise<string>;
  /** Ends the test's transaction (rollback), letting the blocked backend continue. */
  release(): Promise<void>;
};

/** Runs `lockSql` (a `select ... for update` that must lock at least one row) in an open transaction. */
export async function holdRowLock(databaseUrl: string, lockSql: string, params: unknown[] = []): Promise<RowLock> {
  const holder = new pg.Client({ connectionString: databaseUrl });
  // pg_stat_activity is a snapshot per transaction: poll it from a second connection.
  const observer = new pg.Client({ connectionString: databaseUrl });
  await holder.connect();
  await observer.connect();
  const [{ pid }] = (await holder.query<{ pid: number }>('select pg_backend_pid() as pid')).rows as [{ pid: number }];
  await holder.query('begin');
  const locked = await holder.query(lockSql, params);
  expect(locked.rowCount, 'rows locked by the test').toBeGreaterThan(0);
  let released = false;
  return {
    async waiter(timeoutMs = 90_000) {
      let statement = '';
      await expect.poll(async () => {
        const rows = (await observer.query<{ query: string }>(
          'select query from pg_stat_activity where $1 = any(pg_blocking_pids(pid))', [pid])).rows;
        statement = rows[0]?.query ?? '';
        return rows.length;
      }, { timeout: timeoutMs, interval: 100 }).toBeGreaterThan(0);
      return statement;
    },
    async release() {
      if (released) return;
      released = true;
      await holder.query('rollback').finally(() => holder.end());
      await observer.end();
    },
  };
}

export type ActivityRuns = { scheduled: number; completed: number; lastAttempt: number };

/** Per activity type of a workflow execution: how often it was scheduled and completed, and its last attempt. */
export async function activityRuns(handle: WorkflowHandle): Promise<Record<string, ActivityRuns>> {
  const events = (await handle.fetchHistory()).events ?? [];
  const typeOf = new Map<string, string>();
  const out: Record<string, ActivityRuns> = {};
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled) {
      const type = scheduled.activityType!.name!;
      typeOf.set(String(e.eventId), type);
      out[type] ??= { scheduled: 0, completed: 0, lastAttempt: 0 };
      out[type].scheduled++;
    }
    const started = e.activityTaskStartedEventAttributes;
    if (started) {
      const run = out[typeOf.get(String(started.scheduledEventId))!]!;
      run.lastAttempt = Math.max(run.lastAttempt, started.attempt ?? 0);
    }
    const completed = e.activityTaskCompletedEventAttributes;
    if (completed) out[typeOf.get(String(completed.scheduledEventId))!]!.completed++;
  }
  return out;
}

/**
 * Waits until an activity of this type has been picked up by a worker (pending and no longer scheduled):
 * up to two minutes, as a worker started on a loaded machine first bundles its workflows.
 */
export async function waitForRunningActivity(handle: WorkflowHandle, activityType: string, timeoutMs = 120_000): Promise<void> {
  await expect.poll(async () => {
    const d = await handle.describe().catch(() => null);
    // state 1 = PENDING_ACTIVITY_STATE_SCHEDULED: not yet picked up.
    return d?.raw.pendingActivities?.some((a) => a.activityType?.name === activityType && String(a.state) !== '1') ?? false;
  }, { timeout: timeoutMs, interval: 50 }).toBe(true);
}
