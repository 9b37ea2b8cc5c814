import { z } from 'zod';
import { eventBatch } from '../../../core/memory/events.queries.ts';
import { memoryBatchWorkflowId } from '../../../temporal/starts.ts';
import { parseFlags, UsageError, type AdminCommand } from '../registry.ts';

export const memoryEventCommand: AdminCommand = {
  name: 'memory event',
  summary: 'Show a memory event (by the event_id of a write\'s receipt) and the workflow of the batch that took it.',
  usage: 'memory event --id EVENT_ID',
  options: { id: { type: 'string' } },
  async run(ctx, args) {
    const { id } = parseFlags(z.object({ id: z.uuid() }), args);
    const event = await eventBatch(ctx.orm.em.fork(), id);
    if (!event) throw new UsageError(`No memory event ${id}.`);
    ctx.out({
      id: event.id, accountId: event.account_id, kind: event.kind, status: event.status,
      batchId: event.batch_id, dispatchedAt: event.dispatched_at,
      // Search the Temporal UI with WorkflowId = "<this>"; null while the event waits for a batch.
      workflowId: event.batch_id ? memoryBatchWorkflowId(event.batch_id) : null,
    });
  },
};
