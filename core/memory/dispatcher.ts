import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { dedicatedConnection, listen as listenTo, type DedicatedConnection } from '../../platform/db/connections.ts';
import type { Orm } from '../../platform/db/orm.ts';
import type { Logger } from '../../platform/logger.ts';
import { MEMORY_EVENT_CHANNEL } from './events.ts';
import { claimBatch } from './events.queries.ts';

export type DispatcherOptions = {
  /** Most events per batch workflow (at most the batches' own limit, `MemoryBatches.maxEvents`). */
  maxBatch?: number;
  /** Batches of this dispatcher running at once; while they run, new events gather into the next. */
  maxInFlight?: number;
  /** A dispatched event still queued after this long (its start was lost) is dispatched again. */
  staleMs?: number;
  /** How often the queue is checked without a notification (lost notifications, stale dispatches). */
  pollMs?: number;
  /**
   * While a batch runs, how long events gather before the next one is claimed: under load, batches of
   * several events instead of one each. An event arriving when nothing runs is dispatched at once.
   */
  lingerMs?: number;
};


/**
 * How batches run: `run` starts the batch's workflow and resolves when it has finished; `maxEvents` is
 * the most events one batch may hold. Injected by the worker (temporal/starts.ts).
 */
export type MemoryBatches = { run(batchId: string, eventIds: string[]): Promise<unknown>; maxEvents: number };

/**
 * The memory event dispatcher of a worker process. Writes only store their event `queued` and notify;
 * this claims the queued events in batches and starts one workflow per batch, so the Temporal cost of
 * an event (a workflow start, its tasks and its history) is shared by every event of its batch, and the
 * API does no Temporal call at all on a write. With `maxInFlight` batches running, the events that
 * arrive meanwhile gather into the next batch: batches stay small (fast) when the load is light and
 * grow with it. Nothing here is needed for correctness: the claim is in PostgreSQL, a lost start is
 * dispatched again after `staleMs`, and batches are idempotent.
 */
export function startMemoryDispatcher(deps: { orm: Orm; batches: MemoryBatches; logger: Logger } & DispatcherOptions) {
  const { maxBatch = deps.batches.maxEvents, maxInFlight = 2, staleMs = 30_000, pollMs = 1000, lingerMs = 25 } = deps;
  const log = deps.logger.child({ component: 'memory-dispatcher' });
  let stopped = false;
  let pumping = false;
  let wanted = false;
  let inFlight = 0;
  let listener: DedicatedConnection | undefined;

  const pump = async () => {
    if (pumping) return;
    pumping = true;
    try {
      while (wanted && !stopped && inFlight < maxInFlight) {
        if (inFlight > 0 && lingerMs > 0) await sleep(lingerMs);
        wanted = false;
        const batchId = randomUUID();
        const eventIds = await claimBatch(deps.orm.em.fork(), batchId, maxBatch, staleMs);
        if (eventIds.length === 0) break;
        if (eventIds.length === maxBatch) wanted = true; // more are waiting
        inFlight++;
        const done = () => {
          inFlight--;
          kick();
        };
        waitBounded(deps.batches.run(batchId, eventIds), staleMs * 4)
          .catch((err: unknown) => {
            if (!stopped) log.warn({ err, batchId, events: eventIds.length }, 'memory batch start or wait failed; its events are dispatched again when stale');
          })
          .finally(done);
      }
    } catch (err) {
      if (!stopped) log.warn({ err }, 'claiming memory events failed; retrying at the next poll');
    } finally {
      pumping = false;
    }
  };
  const kick = () => {
    wanted = true;
    void pump();
  };

  // LISTEN on a connection of its own; on error it is replaced at the next poll (the poll covers the gap).
  const listen = async () => {
    if (listener || stopped) return;
    const client = dedicatedConnection(deps.orm.config.get('clientUrl')!);
    listener = client;
    client.on('notification', kick);
    client.on('error', (err) => {
      log.warn({ err }, 'memory event listener lost its connection; reconnecting');
      if (listener === client) listener = undefined;
      void client.end().catch(() => {});
    });
    try {
      await client.connect();
      await listenTo(client, MEMORY_EVENT_CHANNEL);
      kick(); // events queued before the listener was up
    } catch (err) {
      if (listener === client) listener = undefined;
      await client.end().catch(() => {});
      if (!stopped) log.warn({ err }, 'memory event listener could not connect; polling meanwhile');
    }
  };

  void listen();
  const timer = setInterval(() => {
    void listen();
    kick();
  }, pollMs);
  timer.unref();

  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      const l = listener;
      listener = undefined;
      await l?.end().catch(() => {});
    },
  };
}

/** Resolves when `p` settles or after `ms`, whichever is first (a batch that hangs frees its slot). */
async function waitBounded(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const elapsed = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, ms);
    timer.unref(); // never what keeps a stopping process alive
  });
  await Promise.race([p, elapsed]).finally(() => clearTimeout(timer));
}
