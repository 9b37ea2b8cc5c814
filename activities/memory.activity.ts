import { processBatch } from '../core/memory/batch.ts';
import type { ClaimDeriver } from '../core/memory/deriver.ts';
import { failEvents } from '../core/memory/event-steps.ts';
import type { ActivityDeps } from './deps.ts';
import { withHeartbeats } from './heartbeats.ts';

/** Memory event activities: thin adapters over core/memory (idempotent by construction). */
export function createMemoryActivities(deps: ActivityDeps, deriver: ClaimDeriver) {
  return {
    async processMemoryBatch(input: { batchId: string; eventIds: string[] }) {
      return withHeartbeats(() => processBatch(deps.orm.em.fork(), deriver, {
        batchId: input.batchId,
        eventIds: input.eventIds,
        onError: (eventId, err) => deps.logger.warn({ err, eventId, batchId: input.batchId }, 'memory event failed; its batch retries it'),
        embeddings: { embedder: deps.embedder ?? null, log: deps.logger },
      }));
    },
    async failMemoryEvents(input: { eventIds: string[]; message: string }): Promise<void> {
      await failEvents(deps.orm.em.fork(), input.eventIds, input.message);
    },
  };
}
