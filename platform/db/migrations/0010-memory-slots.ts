import { Migration } from '@mikro-orm/migrations';

/**
 * Native memory, second step: the deriver's slot key on claims (what a claim is about, such as
 * `favourite:mountain` or `home`), so a new statement about the same slot of the same peer is surfaced
 * as a conflict with the current claim instead of silently replacing it, and an exact duplicate is not
 * stored twice. Also an index for the per-account event queue counts and message pages by peer.
 */
export class Migration0010MemorySlots extends Migration {
  override name = '0010-memory-slots';

  override up(): void {
    this.addSql('alter table memory_claim add column slot text;');
    this.addSql('create index memory_claim_slot_idx on memory_claim(peer_id, slot) where slot is not null;');
    this.addSql('create index memory_message_peer_time_idx on memory_message(peer_id, created_at desc);');
  }

  override down(): void {
    this.addSql('drop index if exists memory_message_peer_time_idx;');
    this.addSql('drop index if exists memory_claim_slot_idx;');
    this.addSql('alter table memory_claim drop column if exists slot;');
  }
}
