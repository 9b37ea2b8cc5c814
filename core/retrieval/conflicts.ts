import type { EntityManager } from '@mikro-orm/postgresql';
import type { Boundary } from './boundary.ts';
import type { CitedRef } from './citations.ts';
import { conflictPairs } from './conflicts.queries.ts';

/**
 * The contradictions native memory has recorded (memory_claim.conflicts_with) among the given claims
 * and the claims they conflict with: a new claim lists the current claims of its slot it contradicts
 * (stored once, on the newer claim), so both directions are read. Each group holds
 * claims inside the boundary only (current, eligible, the key's audiences, the selectors), so every
 * handle a result shows for them resolves; a group of fewer than two is no conflict any more.
 */
export type KnownConflict = { topic: string; claims: { ref: CitedRef; text: string }[] };

export async function claimConflicts(em: EntityManager, b: Boundary, claimIds: string[]): Promise<KnownConflict[]> {
  if (claimIds.length === 0) return [];
  const rows = await conflictPairs(em, b, claimIds);
  // Claims joined by a recorded contradiction form one group (one topic: the slot of one peer).
  const groupOf = new Map<string, Set<string>>();
  const text = new Map<string, string>();
  const topic = new Map<Set<string>, string>();
  for (const r of rows) {
    text.set(r.claim_id, r.claim_text);
    text.set(r.other_id, r.other_text);
    const a = groupOf.get(r.claim_id);
    const o = groupOf.get(r.other_id);
    const group = a ?? o ?? new Set<string>();
    if (a && o && a !== o) for (const id of o) group.add(id);
    for (const id of [r.claim_id, r.other_id, ...(o ?? [])]) {
      group.add(id);
      groupOf.set(id, group);
    }
    topic.set(group, topic.get(group) ?? `peer ${r.peer}: ${r.slot?.replace(/:/g, ' ') ?? 'conflicting claims'}`);
  }
  return [...new Set(groupOf.values())].map((g) => ({
    topic: topic.get(g)!,
    claims: [...g].sort().map((id) => ({ ref: { table: 'claim' as const, id }, text: text.get(id)! })),
  }));
}
