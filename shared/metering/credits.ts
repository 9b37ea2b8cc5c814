import type { EntityManager } from '@mikro-orm/postgresql';
import { Account } from '../db/entities/index.ts';

export type CreditBalance = { monthlyRemaining: number; onboardingRemaining: number; totalRemaining: number };

/**
 * The account's spendable credits. Until the credit ledger lands (metering issue) nothing spends
 * credits, so the balance is the provisioned monthly allowance plus the onboarding grant.
 */
export async function getCreditBalance(em: EntityManager, accountId: string): Promise<CreditBalance> {
  const a = await em.findOneOrFail(Account, { id: accountId });
  return {
    monthlyRemaining: a.monthlyCredits,
    onboardingRemaining: a.onboardingCredits,
    totalRemaining: a.monthlyCredits + a.onboardingCredits,
  };
}
