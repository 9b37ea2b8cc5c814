import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../platform/errors.ts';
import { accountAllowances, appendLedger, type LedgerEntry, balanceRow, createBalance, ledgerSums, setPeriodStart, setRemaining } from './ledger.queries.ts';
import { creditPeriod, isoDate } from './periods.ts';

// The credit ledger. Every balance change is one append-only ledger row plus the matching update of
// credit_balance, in one transaction, with the balance row locked (select ... for update): concurrent
// writers for one account queue up, so the balance can never be overdrawn (the check constraint
// monthly_remaining >= 0 and onboarding_remaining >= 0 backs this up). Ledger rows carry idempotency keys;
// a retried writer finds its row and changes nothing.

export type Tx = EntityManager;
export type { LedgerEntry, LedgerKind } from './ledger.queries.ts';
export type Balance = {
  accountId: string;
  periodStart: Date;
  periodEnd: Date;
  monthly: number;
  onboarding: number;
  monthlyAllowance: number;
};


/**
 * Locks and returns the account's balance, creating it (with the onboarding grant and the first
 * monthly allowance) on first use and renewing the monthly allowance when a new period has begun.
 * Must run inside a transaction.
 */
export async function lockBalance(tx: Tx, accountId: string, now = new Date()): Promise<Balance> {
  const acct = await accountAllowances(tx, accountId);
  if (!acct) throw new AppError(404, 'not_found', 'No such account.');
  const period = creditPeriod(new Date(acct.created_at), now);
  const created = await createBalance(tx, accountId, isoDate(period.start));
  const row = await balanceRow(tx, accountId, { lock: true });
  let balance: Balance = {
    accountId,
    periodStart: period.start,
    periodEnd: period.end,
    monthly: row!.monthly_remaining,
    onboarding: row!.onboarding_remaining,
    monthlyAllowance: row!.monthly_credits,
  };
  if (created) {
    balance = await applyLedger(tx, balance, {
      kind: 'grant_onboarding', key: 'grant_onboarding', amount: acct.onboarding_credits,
      monthlyDelta: 0, onboardingDelta: acct.onboarding_credits, reason: 'one-time onboarding credits',
    });
    balance = await applyLedger(tx, balance, {
      kind: 'grant_monthly', key: `grant_monthly:${isoDate(period.start)}`, amount: acct.monthly_credits,
      monthlyDelta: acct.monthly_credits, onboardingDelta: 0, reason: 'monthly allowance',
    });
  } else if (isoDate(new Date(row!.period_start)) < isoDate(period.start)) {
    // A new monthly period: unused monthly credits lapse and the allowance is granted afresh.
    balance = await applyLedger(tx, balance, {
      kind: 'period_reset', key: `period_reset:${isoDate(period.start)}`, amount: acct.monthly_credits,
      monthlyDelta: acct.monthly_credits - balance.monthly, onboardingDelta: 0, reason: 'monthly period renewed',
    });
    await setPeriodStart(tx, accountId, isoDate(period.start));
  }
  return balance;
}


/** Appends one ledger row and moves the (locked) balance by its deltas; a repeated key is a no-op. */
export async function applyLedger(tx: Tx, balance: Balance, e: LedgerEntry): Promise<Balance> {
  const monthly = balance.monthly + e.monthlyDelta;
  const onboarding = balance.onboarding + e.onboardingDelta;
  if (monthly < 0 || onboarding < 0) {
    throw new AppError(402, 'account_credits_exhausted', 'Not enough credits.');
  }
  if (!(await appendLedger(tx, balance.accountId, e, { monthly, onboarding }))) return balance; // already applied by an earlier attempt
  if (e.monthlyDelta !== 0 || e.onboardingDelta !== 0) await setRemaining(tx, balance.accountId, { monthly, onboarding });
  return { ...balance, monthly, onboarding };
}

/**
 * Reads the balance. A plain read when it exists and its period is current (reads must not queue
 * behind each other on the row lock); otherwise the locked path creates or renews it.
 */
export async function getBalance(em: EntityManager, accountId: string, now = new Date()): Promise<Balance> {
  const row = await balanceRow(em, accountId, { lock: false });
  if (row) {
    const period = creditPeriod(new Date(row.created_at), now);
    if (isoDate(new Date(row.period_start)) >= isoDate(period.start)) {
      return {
        accountId,
        periodStart: period.start,
        periodEnd: period.end,
        monthly: row.monthly_remaining,
        onboarding: row.onboarding_remaining,
        monthlyAllowance: row.monthly_credits,
      };
    }
  }
  return em.transactional((tx) => lockBalance(tx, accountId, now));
}

/** Operator grant or correction: positive adds, negative removes (never below zero). */
export async function adjustCredits(
  em: EntityManager,
  accountId: string,
  input: { key: string; monthly: number; onboarding: number; reason: string },
): Promise<Balance> {
  return em.transactional(async (tx) => {
    const balance = await lockBalance(tx, accountId);
    return applyLedger(tx, balance, {
      kind: 'adjust', key: `adjust:${input.key}`, amount: Math.abs(input.monthly) + Math.abs(input.onboarding),
      monthlyDelta: input.monthly, onboardingDelta: input.onboarding, reason: input.reason,
    });
  });
}

/** Proves the balance equals the ledger: the sums of all deltas must match the stored balance. */
export async function verifyLedger(em: EntityManager, accountId: string) {
  const row = await ledgerSums(em, accountId);
  const ledger = { monthly: Number(row?.ledger_monthly ?? 0), onboarding: Number(row?.ledger_onboarding ?? 0) };
  const stored = { monthly: row?.monthly_remaining ?? 0, onboarding: row?.onboarding_remaining ?? 0 };
  return { ok: ledger.monthly === stored.monthly && ledger.onboarding === stored.onboarding, ledger, stored };
}
