import { bound } from '../db/sql.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import { applyLedger, lockBalance } from './ledger.ts';

export type LimitChanges = Partial<{
  queryDailyLimit: number;
  ingestDailyLimit: number;
  queryMonthlyLimit: number;
  ingestMonthlyLimit: number;
  monthlyCredits: number;
  /** The account's own OCR provider budgets of previews, in pages (shared/ingest/ocr/budgets.ts). */
  ocrPreviewMaxPages: number;
  ocrPreviewDailyPages: number;
}>;

const columns: Record<keyof LimitChanges, string> = {
  queryDailyLimit: 'query_daily_limit',
  ingestDailyLimit: 'ingest_daily_limit',
  queryMonthlyLimit: 'query_monthly_limit',
  ingestMonthlyLimit: 'ingest_monthly_limit',
  monthlyCredits: 'monthly_credits',
  ocrPreviewMaxPages: 'ocr_preview_max_pages',
  ocrPreviewDailyPages: 'ocr_preview_daily_pages',
};

/**
 * Changes an account's quota limits or monthly allowance. Every change is recorded as a ledger row
 * (kind limit_change, no balance movement) in the same transaction, so the ledger is the audit trail.
 * A new monthly allowance applies from the next period.
 */
export async function changeLimits(em: EntityManager, accountId: string, changes: LimitChanges, key: string) {
  const entries = Object.entries(changes).filter(([, v]) => v !== undefined) as [keyof LimitChanges, number][];
  if (entries.length === 0) return;
  await em.transactional(async (tx) => {
    const balance = await lockBalance(tx, accountId);
    for (const [name, value] of entries) {
      await bound(tx, `update account set ${columns[name]} = ?, updated_at = now() where id = ?`, [value, accountId]);
    }
    await applyLedger(tx, balance, {
      kind: 'limit_change', key: `limit_change:${key}`, amount: 0, monthlyDelta: 0, onboardingDelta: 0,
      reason: JSON.stringify(Object.fromEntries(entries)),
    });
  });
}
