import type { EntityManager } from '@mikro-orm/postgresql';
import { lockBalance, q } from './ledger.ts';
import { isoDate, utcDay } from './periods.ts';
import { readQuota } from './quotas.ts';

const DAYS = 30;

/** Everything GET /v1/account/usage reports, read in one transaction. */
export async function usageReport(em: EntityManager, accountId: string, ledgerLimit: number, now = new Date()) {
  return em.transactional(async (tx) => {
    const balance = await lockBalance(tx, accountId, now);
    const query = await readQuota(tx, accountId, 'query', now);
    const ingest = await readQuota(tx, accountId, 'ingest', now);
    const ledger = await q<{
      id: string; kind: string; amount: number; monthly_delta: number; onboarding_delta: number;
      monthly_after: number; onboarding_after: number; metric: string | null; reason: string | null; created_at: Date;
    }>(
      tx,
      `select id, kind, amount, monthly_delta, onboarding_delta, monthly_after, onboarding_after, metric, reason, created_at
         from credit_ledger where account_id = ? order by id desc limit ?`,
      [accountId, ledgerLimit],
    );

    const firstDay = new Date(utcDay(now).start.getTime() - (DAYS - 1) * 86_400_000);
    const counts = await q<{ day: string; metric: string; used: number }>(
      tx,
      `select to_char(period_start, 'YYYY-MM-DD') as day, metric, used from quota_usage
        where account_id = ? and period = 'day' and period_start >= ?`,
      [accountId, isoDate(firstDay)],
    );
    const credits = await q<{ day: string; charged: string }>(
      tx,
      `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, sum(amount) as charged from credit_ledger
        where account_id = ? and kind = 'charge' and created_at >= ? group by 1`,
      [accountId, firstDay.toISOString()],
    );
    const days = Array.from({ length: DAYS }, (_, i) => {
      const date = isoDate(new Date(firstDay.getTime() + i * 86_400_000));
      const used = (m: string) => counts.find((c) => c.day === date && c.metric === m)?.used ?? 0;
      return {
        date,
        queries: used('query'),
        ingests: used('ingest'),
        creditsCharged: Number(credits.find((c) => c.day === date)?.charged ?? 0),
      };
    });

    const quota = (s: typeof query) => ({
      daily: { limit: s.daily.limit, used: s.daily.used, remaining: s.daily.remaining, resetAt: s.daily.resetAt.toISOString() },
      monthly: { limit: s.monthly.limit, used: s.monthly.used, remaining: s.monthly.remaining, resetAt: s.monthly.resetAt.toISOString() },
    });
    return {
      schemaVersion: 'service-account-usage-v1' as const,
      credits: {
        balance: { totalRemaining: balance.monthly + balance.onboarding },
        monthly: {
          remaining: balance.monthly,
          allowance: balance.monthlyAllowance,
          periodStart: isoDate(balance.periodStart),
          resetAt: balance.periodEnd.toISOString(),
        },
        onboarding: { remaining: balance.onboarding },
      },
      quotas: { query: quota(query), ingest: quota(ingest) },
      ledger: ledger.map((r) => ({
        id: String(r.id),
        kind: r.kind,
        amount: r.amount,
        monthlyDelta: r.monthly_delta,
        onboardingDelta: r.onboarding_delta,
        monthlyAfter: r.monthly_after,
        onboardingAfter: r.onboarding_after,
        metric: r.metric,
        reason: r.reason,
        createdAt: new Date(r.created_at).toISOString(),
      })),
      daily: days,
    };
  });
}
