import type { EntityManager } from '@mikro-orm/postgresql';
import { getBalance } from './ledger.ts';

export type CreditBalance = { monthlyRemaining: number; onboardingRemaining: number; totalRemaining: number };

/** The account's spendable credits, from the ledger-backed balance (renewing the monthly period if due). */
export async function getCreditBalance(em: EntityManager, accountId: string): Promise<CreditBalance> {
  const b = await getBalance(em, accountId);
  return { monthlyRemaining: b.monthly, onboardingRemaining: b.onboarding, totalRemaining: b.monthly + b.onboarding };
}
