import { proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { CAIRN_ACCOUNTS, CAIRN_STATUS, MAX_BATCH_ACCOUNTS } from './search-attributes.ts';

export type MemoryBatchInput = { batchId: string; eventIds: string[] };

// A batch is a few short transactions per event, plus (for add-events with a configured model
// deriver) one provider call per event bounded by MEMORY_DERIVER_TIMEOUT_SECONDS, four peers at a time:
// minutes for a full batch in the worst case. The activity heartbeats, so a killed worker's batch is
// retried after the heartbeat timeout; a retried batch skips the events that already ended.
const processing = proxyActivities<Activities>({
  startToCloseTimeout: '30 minutes',
  heartbeatTimeout: '15 seconds',
  retry: { maximumAttempts: 5, initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});
// Recording the failure must happen: retried until the database answers.
const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

const GIVE_UP = 'Processing failed after several attempts; nothing was derived. Write the messages again.';
/** Tries of an event that keeps failing (database trouble, provider outage) before it ends `failed`. */
const EVENT_ATTEMPTS = 5;

/**
 * A batch of memory events (spec 3.4: add messages, delete a peer, delete a session), dispatched by a
 * worker's dispatcher (core/memory/dispatcher.ts). Events that fail are tried again, alone, with
 * backoff; after EVENT_ATTEMPTS they end `failed` with a message, and the rest of the batch is unaffected.
 */
export async function memoryBatchWorkflow(input: MemoryBatchInput): Promise<{ succeeded: number; failed: number }> {
  let pending = input.eventIds;
  let succeeded = 0;
  let failed = 0;
  const accounts = new Set<string>();
  const finished = (outcome: { succeeded: number; failed: number }) => finish(outcome, accounts);
  for (let attempt = 1; ; attempt++) {
    let retry: string[];
    try {
      const out = await processing.processMemoryBatch({ batchId: input.batchId, eventIds: pending });
      succeeded += out.succeeded;
      failed += out.failed;
      retry = out.retry;
      for (const a of out.accounts ?? []) accounts.add(a);
    } catch {
      retry = pending; // the activity itself kept failing (database down): every unfinished event gives up
      attempt = EVENT_ATTEMPTS;
    }
    if (retry.length === 0) return finished({ succeeded, failed });
    if (attempt >= EVENT_ATTEMPTS) {
      await bookkeeping.failMemoryEvents({ eventIds: retry, message: GIVE_UP });
      return finished({ succeeded, failed: failed + retry.length });
    }
    await sleep(Math.min(500 * 2 ** (attempt - 1), 10_000));
    pending = retry;
  }
}

/**
 * A batch with a failed event is `failed` for operators filtering in the Temporal UI; its accounts are
 * set with the status, in the same workflow task (more than MAX_BATCH_ACCOUNTS: the first of them).
 */
function finish(outcome: { succeeded: number; failed: number }, accounts: Set<string>) {
  upsertSearchAttributes([
    { key: CAIRN_STATUS, value: outcome.failed > 0 ? 'failed' : 'succeeded' },
    ...(accounts.size ? [{ key: CAIRN_ACCOUNTS, value: [...accounts].sort().slice(0, MAX_BATCH_ACCOUNTS) }] : []),
  ]);
  return outcome;
}
