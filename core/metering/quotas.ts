import { AppError } from '../../platform/errors.ts';
import { type Tx } from './ledger.ts';
import { isoDate, secondsUntil, utcDay, utcMonth } from './periods.ts';
import { countUnit, quotaLimits, unitsUsed, type Metric } from './quotas.queries.ts';

export type { Metric };

export type QuotaState = {
  metric: Metric;
  daily: { limit: number; used: number; remaining: number; resetAt: Date };
  monthly: { limit: number; used: number; remaining: number; resetAt: Date };
};

/** A metric's counters from its limits and units used in the current UTC day and month. */
export function quotaStateOf(
  metric: Metric,
  now: Date,
  daily: { limit: number; used: number },
  monthly: { limit: number; used: number },
): QuotaState {
  return {
    metric,
    daily: { ...daily, remaining: Math.max(0, daily.limit - daily.used), resetAt: utcDay(now).end },
    monthly: { ...monthly, remaining: Math.max(0, monthly.limit - monthly.used), resetAt: utcMonth(now).end },
  };
}

/** 429 account_quota_exceeded, retry-after = until the exhausted window resets. */
export function quotaExceeded(state: QuotaState, window: 'daily' | 'monthly', now: Date): AppError {
  const exhausted = state[window];
  return new AppError(429, 'account_quota_exceeded', `The ${state.metric} allowance is used up until ${exhausted.resetAt.toISOString()}.`, {
    'retry-after': String(secondsUntil(exhausted.resetAt, now)),
    ...quotaHeaders(state),
  });
}

/** The counters of one metric now (no change). */
export async function readQuota(tx: Tx, accountId: string, metric: Metric, now = new Date()): Promise<QuotaState> {
  const limits = await quotaLimits(tx, accountId, metric);
  if (!limits) throw new AppError(404, 'not_found', 'No such account.');
  const dUsed = await unitsUsed(tx, accountId, { metric, period: 'day', start: isoDate(utcDay(now).start) });
  const mUsed = await unitsUsed(tx, accountId, { metric, period: 'month', start: isoDate(utcMonth(now).start) });
  return quotaStateOf(metric, now, { limit: limits.daily, used: dUsed }, { limit: limits.monthly, used: mUsed });
}

/**
 * Spends one unit of a metric's daily and monthly allowance, or refuses with 429
 * account_quota_exceeded (retry-after = until the exhausted window resets) and spends nothing.
 * Runs inside the caller's transaction, after the balance lock, so it is serialised per account.
 */
export async function consumeQuota(tx: Tx, accountId: string, metric: Metric, now = new Date()): Promise<QuotaState> {
  const state = await readQuota(tx, accountId, metric, now);
  if (state.daily.remaining <= 0) throw quotaExceeded(state, 'daily', now);
  if (state.monthly.remaining <= 0) throw quotaExceeded(state, 'monthly', now);
  for (const [period, start] of [['day', utcDay(now).start], ['month', utcMonth(now).start]] as const) {
    await countUnit(tx, accountId, { metric, period, start: isoDate(start) });
  }
  return {
    metric,
    daily: { ...state.daily, used: state.daily.used + 1, remaining: state.daily.remaining - 1 },
    monthly: { ...state.monthly, used: state.monthly.used + 1, remaining: state.monthly.remaining - 1 },
  };
}

export function quotaHeaders(s: QuotaState): Record<string, string> {
  return {
    'x-service-quota-metric': s.metric,
    'x-service-quota-daily-limit': String(s.daily.limit),
    'x-service-quota-daily-remaining': String(s.daily.remaining),
    'x-service-quota-daily-reset': s.daily.resetAt.toISOString(),
    'x-service-quota-monthly-limit': String(s.monthly.limit),
    'x-service-quota-monthly-remaining': String(s.monthly.remaining),
    'x-service-quota-monthly-reset': s.monthly.resetAt.toISOString(),
  };
}
