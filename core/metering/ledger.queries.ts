import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The credit ledger's statements (credit_balance, credit_ledger); the rules are in ledger.ts.

export type LedgerKind =
  | 'grant_monthly' | 'grant_onboarding' | 'period_reset' | 'reserve' | 'charge' | 'refund' | 'adjust' | 'limit_change';

/** One ledger row to append: an idempotency key (a repeated key is a no-op) and the balance's deltas. */
export type LedgerEntry = {
  kind: LedgerKind;
  key: string;
  amount: number;
  monthlyDelta: number;
  onboardingDelta: number;
  reservationId?: string;
  metric?: 'query' | 'ingest';
  reason?: string;
};

type BalanceRow = {
  period_start: Date | string;
  monthly_remaining: number;
  onboarding_remaining: number;
  monthly_credits: number;
  onboarding_credits: number;
  created_at: Date;
};

export async function accountAllowances(tx: EntityManager, accountId: string) {
  const [acct] = await bound<{ created_at: Date; monthly_credits: number; onboarding_credits: number }>(tx,
    sql`select created_at, monthly_credits, onboarding_credits from account where id = ${accountId}`);
  return acct;
}

/** Creates the account's (empty) balance row; false when it already exists. */
export async function createBalance(tx: EntityManager, accountId: string, periodStart: string): Promise<boolean> {
  const inserted = await bound(tx, sql`insert into credit_balance (account_id, period_start, monthly_remaining, onboarding_remaining)
    values (${accountId}, ${periodStart}, 0, 0) on conflict (account_id) do nothing returning account_id`);
  return inserted.length > 0;
}

/** The balance with the account's allowances; `lock`: select ... for update of the balance row. */
export async function balanceRow(em: EntityManager, accountId: string, opts: { lock: boolean }): Promise<BalanceRow | undefined> {
  const [row] = await bound<BalanceRow>(em, sql`select b.period_start, b.monthly_remaining, b.onboarding_remaining, a.monthly_credits,
      a.onboarding_credits, a.created_at
    from credit_balance b join account a on a.id = b.account_id where b.account_id = ${accountId}${sql.raw(opts.lock ? ' for update of b' : '')}`);
  return row;
}

export async function setPeriodStart(tx: EntityManager, accountId: string, periodStart: string): Promise<void> {
  await bound(tx, sql`update credit_balance set period_start = ${periodStart} where account_id = ${accountId}`);
}

/** Appends one ledger row with the balance after it; false when its key was applied before. */
export async function appendLedger(tx: EntityManager, accountId: string, e: LedgerEntry, after: { monthly: number; onboarding: number }): Promise<boolean> {
  const rows = await bound(tx, sql`insert into credit_ledger (account_id, idempotency_key, kind, amount, monthly_delta, onboarding_delta,
      monthly_after, onboarding_after, reservation_id, metric, reason)
    values (${accountId}, ${e.key}, ${e.kind}, ${e.amount}, ${e.monthlyDelta}, ${e.onboardingDelta}, ${after.monthly}, ${after.onboarding},
      ${e.reservationId ?? null}, ${e.metric ?? null}, ${e.reason ?? null})
    on conflict (account_id, idempotency_key) do nothing returning id`);
  return rows.length > 0;
}

export async function setRemaining(tx: EntityManager, accountId: string, remaining: { monthly: number; onboarding: number }): Promise<void> {
  await bound(tx, sql`update credit_balance set monthly_remaining = ${remaining.monthly}, onboarding_remaining = ${remaining.onboarding},
    updated_at = now() where account_id = ${accountId}`);
}

/** The sums of the ledger's deltas beside the stored balance (verifyLedger). */
export async function ledgerSums(em: EntityManager, accountId: string) {
  const [row] = await bound<{
    ledger_monthly: string | null; ledger_onboarding: string | null; monthly_remaining: number | null; onboarding_remaining: number | null;
  }>(em, sql`select (select sum(monthly_delta) from credit_ledger where account_id = ${accountId}) as ledger_monthly,
      (select sum(onboarding_delta) from credit_ledger where account_id = ${accountId}) as ledger_onboarding,
      b.monthly_remaining, b.onboarding_remaining
    from (select 1) one left join credit_balance b on b.account_id = ${accountId}`);
  return row;
}

export type LedgerRow = {
  id: string; kind: string; amount: number; monthly_delta: number; onboarding_delta: number; monthly_after: number;
  onboarding_after: number; metric: string | null; reason: string | null; created_at: Date; reservation_id: string | null;
};

/** The account's newest ledger rows, newest first. */
export async function newestLedgerRows(tx: EntityManager, accountId: string, limit: number): Promise<LedgerRow[]> {
  return bound<LedgerRow>(tx, sql`select id, kind, amount, monthly_delta, onboarding_delta, monthly_after, onboarding_after, metric, reason,
      created_at, reservation_id
    from credit_ledger where account_id = ${accountId} order by id desc limit ${limit}`);
}

/** Credits charged per UTC day since `from`. */
export async function dailyCharges(tx: EntityManager, accountId: string, from: Date) {
  return bound<{ day: string; charged: string }>(tx, sql`select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, sum(amount) as charged
    from credit_ledger where account_id = ${accountId} and kind = 'charge' and created_at >= ${from.toISOString()} group by 1`);
}
