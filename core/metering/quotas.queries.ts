import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The quota statements (account limits, quota_usage); the rules are in quotas.ts.

export type Metric = 'query' | 'ingest';

/** The account's daily and monthly limits of a metric; undefined when there is no such account. */
export async function quotaLimits(tx: EntityManager, accountId: string, metric: Metric) {
  const columns = sql.raw(metric === 'query' ? 'query_daily_limit as daily, query_monthly_limit as monthly' : 'ingest_daily_limit as daily, ingest_monthly_limit as monthly');
  const [row] = await bound<{ daily: number; monthly: number }>(tx, sql`select ${columns} from account where id = ${accountId}`);
  return row;
}

/** Units of a metric used in the period starting `periodStart` (YYYY-MM-DD). */
/** A metric's period of quota usage: 'day' or 'month', starting `start` (YYYY-MM-DD). */
export type QuotaPeriod = { metric: Metric; period: 'day' | 'month'; start: string };

export async function unitsUsed(tx: EntityManager, accountId: string, q: QuotaPeriod): Promise<number> {
  const { metric, period, start: periodStart } = q;
  const [row] = await bound<{ used: number }>(tx, sql`select used from quota_usage
    where account_id = ${accountId} and metric = ${metric} and period = ${period} and period_start = ${periodStart}`);
  return row?.used ?? 0;
}

/** Counts one unit of a metric in the period starting `periodStart`. */
export async function countUnit(tx: EntityManager, accountId: string, q: QuotaPeriod): Promise<void> {
  const { metric, period, start: periodStart } = q;
  await bound(tx, sql`insert into quota_usage (account_id, metric, period, period_start, used)
    values (${accountId}, ${metric}, ${period}, ${periodStart}, 1)
    on conflict (account_id, metric, period, period_start) do update set used = quota_usage.used + 1`);
}

/** Units used per UTC day and metric since `fromDay` (YYYY-MM-DD). */
export async function dailyUnits(tx: EntityManager, accountId: string, fromDay: string) {
  return bound<{ day: string; metric: string; used: number }>(tx, sql`select to_char(period_start, 'YYYY-MM-DD') as day, metric, used
    from quota_usage where account_id = ${accountId} and period = 'day' and period_start >= ${fromDay}`);
}
