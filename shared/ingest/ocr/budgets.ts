import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../config.ts';
import { bound } from '../../db/sql.ts';

/**
 * An account's provider budget for previews, in pages: per request and per UTC day (the account row's
 * ocr_preview_* columns, else OCR_PREVIEW_MAX_PAGES / OCR_PREVIEW_DAILY_PAGES), with the pages its
 * previews used today and what a page costs. Reported by GET /v1/access.
 */
export type ProcessingBudget = { creditsPerPage: number; pagesPerRequest: number; pagesPerDay: number; pagesUsedToday: number };

export async function processingBudget(em: EntityManager, ocr: Config['ocr'], accountId: string): Promise<ProcessingBudget> {
  const [row] = await bound<{ request: number | null; daily: number | null; used: number }>(
    em,
    // Provider pages of the account's previews since UTC midnight (failed ones count the pages they used).
    `select a.ocr_preview_max_pages as request, a.ocr_preview_daily_pages as daily,
            (select coalesce(sum(p.pages), 0)::int from provider_preview p
              where p.account_id = a.id and p.created_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC') as used
       from account a where a.id = ?`,
    [accountId],
  );
  return {
    creditsPerPage: ocr.creditsPerPage,
    pagesPerRequest: row?.request ?? ocr.previewMaxPages,
    pagesPerDay: row?.daily ?? ocr.previewDailyPages,
    pagesUsedToday: row?.used ?? 0,
  };
}
