import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export type MemoryEventInput = { eventId: string };

// Processing an event is a few short database transactions, plus (for add-events with a configured
// model deriver) one provider call bounded by MEMORY_DERIVER_TIMEOUT_SECONDS: a minute per attempt.
// Retried with backoff for infrastructure failures (database blip, worker crash, provider outage); five
// attempts keep a broken provider from holding an event for long before it ends `failed`. The
// activity heartbeats: a killed worker's event is retried after the heartbeat timeout, not the minute.
const processing = proxyActivities<Activities>({
  startToCloseTimeout: '1 minute',
  heartbeatTimeout: '15 seconds',
  retry: { maximumAttempts: 5, initialInterval: '500 milliseconds', backoffCoefficient: 2, maximumInterval: '10 seconds' },
});
// Recording the failure must happen: retried until the database answers.
const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

function publicFailure(err: unknown): string {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === 'MemoryEventRefused') return cause.message;
  return 'Processing failed after several attempts; nothing was derived. Write the messages again.';
}

/** One memory event (spec 3.4): add messages (derive a claim), delete a peer, or delete a session. */
export async function memoryEventWorkflow(input: MemoryEventInput): Promise<{ status: string }> {
  try {
    return await processing.processMemoryEvent(input);
  } catch (err) {
    await bookkeeping.failMemoryEvent({ eventId: input.eventId, message: publicFailure(err) });
    return { status: 'failed' };
  }
}
