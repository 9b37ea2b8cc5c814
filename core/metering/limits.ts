import type { EntityManager } from '@mikro-orm/postgresql';
import { applyLedger, lockBalance } from './ledger.ts';
import { setLimit, type LimitChanges } from './limits.queries.ts';

export type { LimitChanges };

/**
 * Changes an account's quota limits or monthly allowance. Every change is recorded as a ledger row
 * (kind limit_change, no balance movement) in the same transaction, so the ledger is the audit trail.
 * A new monthly allowance applies from the next period.
 */
export async function changeLimits(em: EntityManager, accountId: string, changes: LimitChanges, key: string) {
  const entries = Object.entries(changes).filter(([, v]) => v !== undefined) as [keyof LimitChanges, number][];
  if (entries.length === 0) return;
  await em.transactional(async (tx) => {
    const balance = await lockBalance(tx, accountId);
    for (const [name, value] of entries) await setLimit(tx, accountId, name, value);
    await applyLedger(tx, balance, {
      kind: 'limit_change', key: `limit_change:${key}`, amount: 0, monthlyDelta: 0, onboardingDelta: 0,
      reason: JSON.stringify(Object.fromEntries(entries)),
    });
  });
}
