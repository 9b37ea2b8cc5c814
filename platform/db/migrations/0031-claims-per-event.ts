import { Migration } from '@mikro-orm/migrations';

/**
 * An add-event derives a claim for every salient statement of its messages (core/memory/deriver.ts),
 * so an event may own many claims: its index on memory_claim stops being unique. Claim ids stay
 * deterministic per event and position, which is what keeps a retried commit from writing twice.
 */
export class Migration0031ClaimsPerEvent extends Migration {
  override name = '0031-claims-per-event';

  override up(): void {
    this.addSql('drop index if exists memory_claim_event_idx;');
    this.addSql('create index memory_claim_event_idx on memory_claim(event_id) where event_id is not null;');
  }
}
