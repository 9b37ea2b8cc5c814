import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The account's limits (columns of account); changing them is in limits.ts.

export type LimitChanges = Partial<{
  queryDailyLimit: number;
  ingestDailyLimit: number;
  queryMonthlyLimit: number;
  ingestMonthlyLimit: number;
  monthlyCredits: number;
  /** The account's own OCR provider budgets of previews, in pages (core/ingest/ocr/budgets.ts). */
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

export async function setLimit(tx: EntityManager, accountId: string, name: keyof LimitChanges, value: number): Promise<void> {
  await bound(tx, sql`update account set ${sql.raw(columns[name])} = ${value}, updated_at = now() where id = ${accountId}`);
}
