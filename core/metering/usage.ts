import type { EntityManager } from '@mikro-orm/postgresql';
import { lockBalance } from './ledger.ts';
import { dailyCharges, newestLedgerRows, type LedgerRow } from './ledger.queries.ts';
import { isoDate, utcDay } from './periods.ts';
import { readQuota } from './quotas.ts';
import { dailyUnits } from './quotas.queries.ts';

const DAYS = 30;

/**
 * The ledger as a person reads it: one line per operation, its amount the signed change of the balance
 * (debits negative). A metered operation writes up to three rows (reserve the maximum, charge, refund
 * the rest); they are folded into one line whose kind is `charge` once settled (`reserve` while the
 * reservation is still held) and whose amount is what it cost in the end. Other rows (grants, period
 * resets, adjustments, limit changes) are one line each.
 *
 * The latest `limit` operations by start are read from a window of the newest rows: an operation whose
 * first row is in the window has all its later rows there too, and started after any operation whose
 * first row is older. When the window holds fewer starts than asked for, it grows.
 */
async function foldedLedger(tx: EntityManager, accountId: string, limit: number) {
  for (let window = limit * 3 + 3; ; window *= 2) {
    const rows = await newestLedgerRows(tx, accountId, window);
    const lines = new Map<string, { first: LedgerRow; last: LedgerRow; monthly: number; onboarding: number; settled: boolean }>();
    for (const r of [...rows].reverse()) {
      const key = r.reservation_id ?? `row:${r.id}`;
      const line = lines.get(key);
      if (!line) {
        // An operation whose reserve row is older than the window started before everything in it.
        if (r.reservation_id && r.kind !== 'reserve') continue;
        lines.set(key, { first: r, last: r, monthly: r.monthly_delta, onboarding: r.onboarding_delta, settled: r.kind !== 'reserve' });
        continue;
      }
      line.last = r;
      line.monthly += r.monthly_delta;
      line.onboarding += r.onboarding_delta;
      line.settled ||= r.kind === 'charge';
    }
    if (lines.size < limit && rows.length === window) continue;
    return [...lines.values()].reverse().slice(0, limit).map((l) => ({
      id: String(l.first.id),
      kind: l.first.reservation_id ? (l.settled ? 'charge' : 'reserve') : l.first.kind,
      amount: l.monthly + l.onboarding,
      monthlyDelta: l.monthly,
      onboardingDelta: l.onboarding,
      monthlyAfter: l.last.monthly_after,
      onboardingAfter: l.last.onboarding_after,
      metric: l.first.metric,
      reason: l.last.reason ?? l.first.reason,
      createdAt: new Date(l.first.created_at).toISOString(),
    }));
  }
}

/** Everything GET /v1/account/usage reports, read in one transaction. */
export async function usageReport(em: EntityManager, accountId: string, ledgerLimit: number, now = new Date()) {
  return em.transactional(async (tx) => {
    const balance = await lockBalance(tx, accountId, now);
    const query = await readQuota(tx, accountId, 'query', now);
    const ingest = await readQuota(tx, accountId, 'ingest', now);
    const ledger = await foldedLedger(tx, accountId, ledgerLimit);

    const firstDay = new Date(utcDay(now).start.getTime() - (DAYS - 1) * 86_400_000);
    const counts = await dailyUnits(tx, accountId, isoDate(firstDay));
    const credits = await dailyCharges(tx, accountId, firstDay);
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
      ledger,
      daily: days,
    };
  });
}
