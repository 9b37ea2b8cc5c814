import { setTimeout as sleep } from 'node:timers/promises';
import type { Orm } from '../../platform/db/orm.ts';

/** Background work still to do: ingest jobs not yet picked up and memory events not finished. */
async function pending(orm: Orm): Promise<number> {
  const [row] = await orm.em.fork().getConnection().execute<{ n: string }[]>(
    `select (select count(*) from ingest_job where status = 'queued')
          + (select count(*) from memory_event where status in ('queued', 'running')) as n`,
  );
  return Number(row!.n);
}

/**
 * Waits until the worker has caught up with everything the benchmark submitted, so a measurement starts
 * on an idle system and the infrastructure is not stopped under a workflow start still in flight.
 */
export async function waitForBackgroundWork(orm: Orm, timeoutMs = 300_000, pollMs = 250): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while ((await pending(orm)) > 0) {
    if (Date.now() > deadline) throw new Error(`background work did not finish within ${Math.round(timeoutMs / 1000)} s`);
    await sleep(pollMs);
  }
}
