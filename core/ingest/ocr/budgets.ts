import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../../platform/config.ts';
import { budgetRow } from './pages.queries.ts';

/**
 * An account's provider budget for previews, in pages: per request and per UTC day (the account row's
 * ocr_preview_* columns, else OCR_PREVIEW_MAX_PAGES / OCR_PREVIEW_DAILY_PAGES), with the pages its
 * previews used today and what a page costs. Reported by GET /v1/access.
 */
export type ProcessingBudget = { creditsPerPage: number; pagesPerRequest: number; pagesPerDay: number; pagesUsedToday: number };

export async function processingBudget(em: EntityManager, ocr: Config['ocr'], accountId: string): Promise<ProcessingBudget> {
  const row = await budgetRow(em, accountId);
  return {
    creditsPerPage: ocr.creditsPerPage,
    pagesPerRequest: row?.request ?? ocr.previewMaxPages,
    pagesPerDay: row?.daily ?? ocr.previewDailyPages,
    pagesUsedToday: row?.used ?? 0,
  };
}
