/**
 * No double charge (spec 4.3 rule 5): the text a provider-backed preview recognised is kept with the
 * preview (status 'ready') for OCR_PREVIEW_RETENTION_HOURS. Within that time the same account's
 * exact bytes (same SHA-256 and content type) reuse it: a repeated preview plans with it and calls no
 * provider (no credits, no allowance unit); queueing the bytes hands it to the new job, whose build
 * then needs no OCR, and spends no second allowance unit (the preview spent it). A queued preview is
 * used up: queueing the same bytes again is a new submission and pays for its own OCR.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../../db/sql.ts';
import { storedPages } from './pages.ts';
import type { PageText } from './provider.ts';

export type ExactPreview = { accountId: string; sha256: string; contentType: string; retentionMs: number };

const READY = `account_id = ? and sha256 = ? and content_type = ? and status = 'ready' and created_at > now() - ? * interval '1 millisecond'`;
const readyArgs = (p: ExactPreview) => [p.accountId, p.sha256, p.contentType, p.retentionMs];

/** The recognised pages of the latest ready preview of these bytes, or null. */
export async function previewedPages(em: EntityManager, p: ExactPreview): Promise<PageText[] | null> {
  const [row] = await bound<{ id: string }>(em, `select id from provider_preview where ${READY} order by created_at desc limit 1`, readyArgs(p));
  return row ? storedPages(em, row.id) : null;
}

/**
 * Hands the latest ready preview of these bytes to `jobId` (inside the job's creating transaction):
 * its pages become the job's. Returns whether there was one.
 */
export async function takePreview(tx: EntityManager, p: ExactPreview, jobId: string): Promise<boolean> {
  const [row] = await bound<{ id: string }>(
    tx,
    `update provider_preview set status = 'used' where id = (
       select id from provider_preview where ${READY} order by created_at desc limit 1 for update skip locked)
     returning id`,
    readyArgs(p),
  );
  if (!row) return false;
  await bound(tx, `update ocr_page set owner_id = ? where owner_id = ?`, [jobId, row.id]);
  return true;
}
