/**
 * No double charge (spec 4.3 rule 5): the text a provider-backed preview recognised is kept with the
 * preview (status 'ready') for OCR_PREVIEW_RETENTION_HOURS. Within that time the same account's
 * exact bytes (same SHA-256 and content type) reuse it: a repeated preview plans with it and calls no
 * provider (no credits, no allowance unit); queueing the bytes hands it to the new job, whose build
 * then needs no OCR (pages.queries.ts handOverPreview, in the job's creating transaction), and spends no
 * second allowance unit (the preview spent it). A queued preview is used up: queueing the same bytes
 * again is a new submission and pays for its own OCR.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import type { PageText } from './provider.ts';
import { readyPreview, storedPages, type ExactPreview } from './pages.queries.ts';

/** The recognised pages of the latest ready preview of these bytes, or null. */
export async function previewedPages(em: EntityManager, p: ExactPreview): Promise<PageText[] | null> {
  const id = await readyPreview(em, p);
  return id ? storedPages(em, id) : null;
}
