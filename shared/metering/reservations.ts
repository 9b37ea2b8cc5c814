import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors.ts';
import { applyLedger, lockBalance, q, type Balance } from './ledger.ts';
import { isoDate } from './periods.ts';
import { consumeQuota, type Metric, type QuotaState } from './quotas.ts';

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
};

export type Reserved = { reservationId: string; held: number; balance: Balance; quota: QuotaState | null };

/**
 * How a piece of work ended. `retrieval_failed`: nothing useful started, everything is refunded (cost
 * 0). `completed`/`failed_after_retrieval`: the base credit is kept, plus provider work actually done.
 * `abandoned`: the API never reported back (it crashed); the settlement workflow keeps the base credit
 * and refunds all provider work.
 */
export type Outcome = 'completed' | 'retrieval_failed' | 'failed_after_retrieval' | 'abandoned';

export type Settled = { reservationId: string; charged: number; refunded: number; balance: Balance };

export async function reserve(em: EntityManager, input: ReserveInput): Promise<Reserved> {
  return em.transactional(async (tx) => {
    const balance = await lockBalance(tx, input.accountId);
    const quota = input.consumeQuota ? await consumeQuota(tx, input.accountId, input.metric) : null;
    const cost = input.baseCost + input.maxProviderCost;
    if (balance.monthly + balance.onboarding < cost) {
      // Thrown inside the transaction: the quota unit above is rolled back with it.
      throw new AppError(402, 'account_credits_exhausted', 'Not enough credits for this operation.', creditHeaders(balance, 0));
    }
    const fromMonthly = Math.min(cost, balance.monthly); // monthly credits are spent first
    const fromOnboarding = cost - fromMonthly;
    const created = await q(
      tx,
      `insert into credit_reservation (id, account_id, metric, base_cost, max_provider_cost, from_monthly, from_onboarding, status)
       values (?, ?, ?, ?, ?, ?, ?, 'held') on conflict (id) do nothing returning id`,
      [input.reservationId, input.accountId, input.metric, input.baseCost, input.maxProviderCost, fromMonthly, fromOnboarding],
    );
    if (created.length === 0) throw new AppError(409, 'operation_in_progress', 'This reservation already exists.');
    const after = await applyLedger(tx, balance, {
      kind: 'reserve', key: `reserve:${input.reservationId}`, amount: cost,
      monthlyDelta: -fromMonthly, onboardingDelta: -fromOnboarding,
      reservationId: input.reservationId, metric: input.metric,
    });
    return { reservationId: input.reservationId, held: cost, balance: after, quota };
  });
}

type ReservationRow = {
  account_id: string; metric: Metric; base_cost: number; max_provider_cost: number;
  from_monthly: number; from_onboarding: number; status: 'held' | 'settled'; charged: number | null; refunded: number | null;
};

/** Settles a reservation exactly once; settling again returns the first settlement's numbers. */
export async function settle(
  em: EntityManager,
  reservationId: string,
  outcome: Outcome,
  providerCostUsed = 0,
): Promise<Settled> {
  return em.transactional(async (tx) => {
    const [owner] = await q<{ account_id: string }>(tx, 'select account_id from credit_reservation where id = ?', [reservationId]);
    if (!owner) throw new AppError(404, 'not_found', 'No such reservation.');
    // Lock order everywhere: balance, then reservation.
    let balance = await lockBalance(tx, owner.account_id);
    const [r] = await q<ReservationRow>(tx, 'select * from credit_reservation where id = ? for update', [reservationId]);
    if (r!.status === 'settled') return { reservationId, charged: r!.charged!, refunded: r!.refunded!, balance };

    const held = r!.base_cost + r!.max_provider_cost;
    const provider = Math.min(Math.max(0, Math.floor(providerCostUsed)), r!.max_provider_cost);
    const charged =
      outcome === 'retrieval_failed' ? 0 : outcome === 'abandoned' ? r!.base_cost : r!.base_cost + provider;
    const refund = held - charged;
    // Refund in reverse order of spending: onboarding credits first, then monthly.
    const toOnboarding = Math.min(refund, r!.from_onboarding);
    const toMonthly = refund - toOnboarding;

    balance = await applyLedger(tx, balance, {
      kind: 'charge', key: `charge:${reservationId}`, amount: charged, monthlyDelta: 0, onboardingDelta: 0,
      reservationId, metric: r!.metric, reason: outcome,
    });
    if (refund > 0) {
      balance = await applyLedger(tx, balance, {
        kind: 'refund', key: `refund:${reservationId}`, amount: refund,
        monthlyDelta: toMonthly, onboardingDelta: toOnboarding, reservationId, metric: r!.metric, reason: outcome,
      });
    }
    await q(
      tx,
      `update credit_reservation set status = 'settled', charged = ?, refunded = ?, outcome = ?, settled_at = now() where id = ?`,
      [charged, refund, outcome, reservationId],
    );
    return { reservationId, charged, refunded: refund, balance };
  });
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
