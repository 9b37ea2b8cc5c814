import { bound } from '../shared/db/sql.ts';
import { ApplicationFailure } from '@temporalio/activity';
import { processBatch } from '../shared/memory/batch.ts';
import type { ClaimDeriver } from '../shared/memory/deriver.ts';
import { failEvents, processAddEvent, processDeletionEvent } from '../shared/memory/event-steps.ts';
import type { ActivityDeps } from './deps.ts';
import { withHeartbeats } from './heartbeats.ts';

/** Memory event activities: thin adapters over shared/memory (idempotent by construction). */
export function createMemoryActivities(deps: ActivityDeps, deriver: ClaimDeriver) {
  return {
    async processMemoryBatch(input: { batchId: string; eventIds: string[] }) {
      return withHeartbeats(() => processBatch(deps.orm.em.fork(), deriver, input.batchId, input.eventIds,
        (eventId, err) => deps.logger.warn({ err, eventId, batchId: input.batchId }, 'memory event failed; its batch retries it'),
        { embedder: deps.embedder ?? null, log: deps.logger }));
    },
    async failMemoryEvents(input: { eventIds: string[]; message: string }): Promise<void> {
      await failEvents(deps.orm.em.fork(), input.eventIds, input.message);
    },
    // One workflow per event, as started before batches (migration 0013): kept so executions still
    // running across an upgrade finish.
    async processMemoryEvent(input: { eventId: string }): Promise<{ status: string }> {
      const em = deps.orm.em.fork();
      const [ev] = await bound<{ kind: string }>(em, 'select kind from memory_event where id = ?', [input.eventId]);
      if (!ev) throw ApplicationFailure.create({ type: 'MemoryEventRefused', message: 'The event no longer exists.', nonRetryable: true });
      return withHeartbeats(() => ev.kind === 'add_messages' ? processAddEvent(em, deriver, input.eventId) : processDeletionEvent(em, input.eventId));
    },
    async failMemoryEvent(input: { eventId: string; message: string }): Promise<void> {
      await failEvents(deps.orm.em.fork(), [input.eventId], input.message);
    },
  };
}
