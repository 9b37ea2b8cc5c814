import type { Client } from '@temporalio/client';
import type { Orm } from '../db/orm.ts';
import type { Logger } from '../logger.ts';
import { sweepQueuedEvents } from './events.ts';

/**
 * The recovery half of the memory event outbox: every `intervalMs`, starts the workflows of events
 * that are still `queued` after `olderThanMs` (the API's start was lost to a crash or a Temporal
 * outage). Runs in every worker process; starts are idempotent, so several sweepers are harmless.
 */
export function startMemorySweeper(deps: { orm: Orm; temporal: Client; taskQueue: string; logger: Logger; intervalMs?: number; olderThanMs?: number }) {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepQueuedEvents({ em: deps.orm.em.fork(), temporal: deps.temporal, taskQueue: deps.taskQueue }, deps.olderThanMs ?? 10_000)
      .then((n) => n && deps.logger.info({ started: n }, 'memory sweeper started queued events'))
      .catch((err: unknown) => deps.logger.warn({ err }, 'memory sweeper failed; retrying at the next interval'))
      .finally(() => (running = false));
  }, deps.intervalMs ?? 5_000);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
