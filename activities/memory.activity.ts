import { ApplicationFailure } from '@temporalio/activity';
import { sql } from '../shared/memory/db.ts';
import type { ClaimDeriver } from '../shared/memory/deriver.ts';
import { failEvent, processAddEvent, processDeletionEvent } from '../shared/memory/process.ts';
import type { ActivityDeps } from './deps.ts';
import { withHeartbeats } from './heartbeats.ts';

/** Memory event activities: thin adapters over shared/memory/process.ts (idempotent by construction). */
export function createMemoryActivities(deps: ActivityDeps, deriver: ClaimDeriver) {
  return {
    async processMemoryEvent(input: { eventId: string }): Promise<{ status: string }> {
      const em = deps.orm.em.fork();
      const [ev] = await sql<{ kind: string }>(em, 'select kind from memory_event where id = ?', [input.eventId]);
      if (!ev) throw ApplicationFailure.create({ type: 'MemoryEventRefused', message: 'The event no longer exists.', nonRetryable: true });
      return withHeartbeats(() => ev.kind === 'add_messages' ? processAddEvent(em, deriver, input.eventId) : processDeletionEvent(em, input.eventId));
    },
    async failMemoryEvent(input: { eventId: string; message: string }): Promise<void> {
      await failEvent(deps.orm.em.fork(), input.eventId, input.message);
    },
  };
}
