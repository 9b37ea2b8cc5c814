import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';
import type { Boundary } from './boundary.ts';
import { memoryWhere } from './candidates.queries.ts';

// The statement of recorded contradictions among claims (memory_claim.conflicts_with); the grouping is
// in conflicts.ts.

/** A recorded contradiction between two claims, with their texts, slot and peer. */
export type ConflictPair = { claim_id: string; other_id: string; claim_text: string; other_text: string; slot: string | null; peer: string };

/**
 * The contradictions of the given claims both ways (the claims each lists, and the claims listing it),
 * the other claim inside the boundary.
 */
export async function conflictPairs(em: EntityManager, b: Boundary, claimIds: string[]): Promise<ConflictPair[]> {
  return bound<ConflictPair>(
    em,
    sql`with pairs as (
        select e.id as claim_id, x.other_id from memory_claim e cross join lateral unnest(e.conflicts_with) x(other_id)
         where e.id = any(${claimIds}::uuid[]) and e.account_id = ${b.accountId}
        union
        select e.id, o.id from unnest(${claimIds}::uuid[]) e(id) join memory_claim o on o.conflicts_with @> array[e.id] and o.account_id = ${b.accountId})
      select pairs.claim_id, c.id as other_id, e.content as claim_text, c.content as other_text, coalesce(e.slot, c.slot) as slot,
             p.label as peer
        from pairs join memory_claim e on e.id = pairs.claim_id join memory_claim c on c.id = pairs.other_id
        join memory_peer p on p.id = c.peer_id
       where ${sql.join(memoryWhere(b, 'c'), ' and ')}`,
  );
}
