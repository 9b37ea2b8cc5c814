import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../platform/errors.ts';
import { lockBalance, type Balance } from './ledger.ts';
import { isoDate } from './periods.ts';
import { callMetering, heldReservationsBefore, reservationOf } from './reservations.queries.ts';
import { quotaExceeded, quotaStateOf, type Metric, type QuotaState } from './quotas.ts';

// The reservation protocol of spec section 8: hold the maximum possible cost before any work starts
// (402 when it cannot be covered), then settle exactly once: charge what was used and refund the rest.

export type ReserveInput = {
  reservationId: string;
  accountId: string;
  metric: Metric;
  /** Credits always charged once the work has begun (the base credit of a query). */
  baseCost: number;
  /** The most provider work (answer/extraction) could cost; unused parts are refunded. */
  maxProviderCost: number;
  /** Spend one unit of the metric's allowance with this reservation. */
  consumeQuota: boolean;
  /** See callMetering (reservations.queries.ts): the caller commits synchronously before the outcome leaves the process. */
  flushLater?: boolean;
};

export type Reserved = { reservationId: string; held: number; balance: Balance; quota: QuotaState | null };

/**
 * How a piece of work ended. `retrieval_failed`: nothing useful started, everything is refunded (cost
 * 0); `recognition_failed`: the same for OCR whose provider refused the document. `completed`/`failed_after_retrieval`: the base credit is kept, plus provider work actually done.
 * `abandoned`: the API never reported back (it crashed); the settlement workflow keeps the base credit
 * and refunds all provider work.
 */
export type Outcome = 'completed' | 'retrieval_failed' | 'recognition_failed' | 'failed_after_retrieval' | 'abandoned';

/**
 * `already`: the reservation had been settled before this call (by its work, or by the sweeper as
 * abandoned), with that outcome; its numbers are the first settlement's and this call changed nothing.
 */
export type Settled = { reservationId: string; charged: number; refunded: number; balance: Balance; already: Outcome | null };

type BalanceColumns = {
  r_monthly: number; r_onboarding: number; r_period_start: string; r_period_end: string; r_allowance: number;
};
export type ReserveRow = BalanceColumns & {
  r_status: 'ok' | 'no_account' | 'stale' | 'quota_day' | 'quota_month' | 'credits' | 'exists';
  r_daily_limit: number; r_daily_used: number; r_monthly_limit: number; r_monthly_used: number;
};
type SettleRow = BalanceColumns & {
  r_status: 'ok' | 'settled' | 'not_found' | 'stale'; r_account: string; r_charged: number; r_refunded: number;
};

const utcMidnight = (isoDay: string) => new Date(`${isoDay}T00:00:00.000Z`);
const balanceOf = (accountId: string, r: BalanceColumns): Balance => ({
  accountId,
  periodStart: utcMidnight(r.r_period_start),
  periodEnd: utcMidnight(r.r_period_end),
  monthly: r.r_monthly,
  onboarding: r.r_onboarding,
  monthlyAllowance: r.r_allowance,
});

/**
 * Calls one of the metering functions (platform/db/functions/cairn_reserve.sql, cairn_settle.sql; one round trip, one transaction). When the
 * balance does not exist yet or its monthly period has ended, the function answers 'stale' without
 * writing; the balance is then created or renewed by lockBalance (the one place that grants credits)
 * and the function is called again.
 */
async function callRenewing<T extends { r_status: string }>(
  em: EntityManager,
  call: { fn: 'cairn_reserve' | 'cairn_settle'; args: unknown[]; flushLater: boolean | undefined },
  accountOf: (row: T) => string,
  now: Date,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const row = await callMetering<T>(em, call.fn, call.args, call.flushLater);
    if (row.r_status !== 'stale') return row;
    if (attempt > 2) throw new Error('the credit balance could not be renewed');
    await em.transactional((tx) => lockBalance(tx, accountOf(row), now));
  }
}

/**
 * Holds the maximum cost of an operation and spends one unit of its allowance (when asked), in one
 * round trip: 429 when the allowance is used up, else 402 when the credits cannot cover it; nothing is
 * written on a refusal. Monthly credits are spent first.
 */
export async function reserve(em: EntityManager, input: ReserveInput, now = new Date()): Promise<Reserved> {
  const call = { fn: 'cairn_reserve' as const, args: [input.reservationId, ...reserveArgs(input, now)], flushLater: input.flushLater };
  const r = await callRenewing<ReserveRow>(em, call, () => input.accountId, now);
  return reservedFrom(input, r, now);
}

/**
 * cairn_reserve's arguments after the reservation id, for a caller that makes the call part of a
 * larger statement (a query's operation claim): `cairn_reserve(<reservation id>, ?, ?, ?, ?, ?, ?)`.
 */
export function reserveArgs(input: Omit<ReserveInput, 'reservationId'>, now: Date): unknown[] {
  return [input.accountId, input.metric, input.baseCost, input.maxProviderCost, input.consumeQuota, now];
}

/**
 * What a cairn_reserve row means: the reservation, or its refusal (404, 429, 402, 409). A 'stale' row
 * (balance to create or renew first) is the caller's to handle: reserve() renews and calls again.
 */
export function reservedFrom(input: ReserveInput, r: ReserveRow, now: Date): Reserved {
  if (r.r_status === 'stale') throw new Error('reservedFrom: the balance must be renewed first');
  if (r.r_status === 'no_account') throw new AppError(404, 'not_found', 'No such account.');
  const balance = balanceOf(input.accountId, r);
  const quotaState = (): QuotaState => quotaStateOf(input.metric, now,
    { limit: r.r_daily_limit, used: r.r_daily_used }, { limit: r.r_monthly_limit, used: r.r_monthly_used });
  if (r.r_status === 'quota_day' || r.r_status === 'quota_month') throw quotaExceeded(quotaState(), r.r_status === 'quota_day' ? 'daily' : 'monthly', now);
  if (r.r_status === 'credits') {
    throw new AppError(402, 'account_credits_exhausted', 'Not enough credits for this operation.', creditHeaders(balance, 0));
  }
  if (r.r_status === 'exists') throw new AppError(409, 'operation_in_progress', 'This reservation already exists.');
  return {
    reservationId: input.reservationId,
    held: input.baseCost + input.maxProviderCost,
    balance,
    quota: input.consumeQuota ? quotaState() : null,
  };
}

/**
 * Settles a reservation exactly once, in one round trip; settling again returns the first
 * settlement's numbers. `completed`/`failed_after_retrieval` keep the base cost plus the provider work
 * used (capped at the maximum held), `abandoned` keeps the base cost, `retrieval_failed` and `recognition_failed` refund all;
 * refunds go back onboarding credits first, then monthly.
 */
export async function settle(
  em: EntityManager,
  reservationId: string,
  outcome: Outcome,
  opts: { providerCostUsed?: number; now?: Date; flushLater?: boolean } = {},
): Promise<Settled> {
  const { providerCostUsed = 0, now = new Date(), flushLater = false } = opts;
  const provider = Math.max(0, Math.floor(providerCostUsed));
  const call = { fn: 'cairn_settle' as const, args: [reservationId, outcome, provider, now], flushLater };
  const r = await callRenewing<SettleRow>(em, call, (row) => row.r_account, now);
  if (r.r_status === 'not_found') throw new AppError(404, 'not_found', 'No such reservation.');
  const already = r.r_status === 'settled' ? ((await reservationOf(em, reservationId))?.outcome ?? null) as Outcome | null : null;
  return { reservationId, charged: r.r_charged, refunded: r.r_refunded, balance: balanceOf(r.r_account, r), already };
}

export function creditHeaders(b: Balance, cost: number): Record<string, string> {
  return {
    'x-service-credit-cost': String(cost),
    'x-service-credit-remaining': String(b.monthly + b.onboarding),
    'x-service-credit-monthly-remaining': String(b.monthly),
    'x-service-credit-onboarding-remaining': String(b.onboarding),
    'x-service-credit-monthly-period': isoDate(b.periodStart),
  };
}

/**
 * Held reservations older than `olderThanMs`, oldest first: the ones the API did not settle. A
 * provider-backed preview still running and heartbeating within `olderThanMs` is not among them.
 */
export async function staleReservations(em: EntityManager, olderThanMs: number, limit: number): Promise<string[]> {
  return (await heldReservationsBefore(em, olderThanMs, limit)).map((r) => r.id);
}
