import { Migration } from '@mikro-orm/migrations';

/**
 * Memory events are processed in batches (core/memory/dispatcher.ts): a worker's dispatcher claims
 * the queued events nobody has dispatched (batch_id, dispatched_at) and starts one workflow for them.
 * The partial index serves that claim: only queued events are in it, oldest first.
 */
export class Migration0013MemoryEventBatches extends Migration {
  override name = '0013-memory-event-batches';

  override up(): void {
    this.addSql('alter table memory_event add column batch_id uuid, add column dispatched_at timestamptz;');
    this.addSql(`create index memory_event_queued_idx on memory_event(created_at, id) where status = 'queued';`);
  }

  override down(): void {
    this.addSql('drop index if exists memory_event_queued_idx;');
    this.addSql('alter table memory_event drop column if exists batch_id, drop column if exists dispatched_at;');
  }
}
