import { Migration } from '@mikro-orm/migrations';

/**
 * Conflicts between claims are stored one way: a new claim lists the current claims of its slot that
 * it contradicts (conflicts_with), and the older claims are no longer rewritten to list it back. Each
 * contradiction used to update every claim of the slot, each with an ever longer array: for a peer
 * with n conflicting claims the n-th cost n row versions and O(n) bytes each (in the memory benchmark,
 * a quarter of PostgreSQL's time per batch). Reads add the other direction (CLAIM_SELECT in
 * core/memory/claims.ts): the claims whose conflicts_with holds this one, found through this index.
 * Rows written before keep both directions; reads merge them without repeats.
 */
export class Migration0020ClaimConflictsOneWay extends Migration {
  override name = '0020-claim-conflicts-one-way';

  override up(): void {
    this.addSql('create index memory_claim_conflicts_with_idx on memory_claim using gin (conflicts_with);');
  }

  override down(): void {
    this.addSql('drop index if exists memory_claim_conflicts_with_idx;');
  }
}
