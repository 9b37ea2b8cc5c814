import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../../platform/db/sql.ts';
import type { PageText } from './provider.ts';

// The SQL of OCR: recognised pages (`ocr_page`, owned by an ingest job or a
// provider-backed preview) and the previews (`provider_preview`, id = their credit reservation).

export type PreviewStatus = 'running' | 'ready' | 'failed' | 'used' | 'expired';
/** The bytes a preview read, for finding it again: same account, SHA-256 and content type, within retention. */
export type ExactPreview = { accountId: string; sha256: string; contentType: string; retentionMs: number };

export async function storedPages(em: EntityManager, ownerId: string): Promise<PageText[]> {
  return bound<PageText>(em, sql`select page, text, confidence from ocr_page where owner_id = ${ownerId} order by page`);
}

/** Stores pages (a page already stored for the owner is kept as it is). */
export async function storePages(em: EntityManager, owner: { id: string; accountId: string }, pages: PageText[], reservationId: string): Promise<void> {
  await bound(
    em,
    sql`insert into ocr_page (owner_id, page, account_id, text, confidence, reservation_id)
     select ${owner.id}, p.page, ${owner.accountId}, p.text, p.confidence, ${reservationId} from unnest(${pages.map((p) => p.page)}::int[], ${pages.map((p) => p.text)}::text[], ${pages.map((p) => p.confidence)}::int[]) as p(page, text, confidence)
     on conflict (owner_id, page) do nothing`,
  );
}

/** The job's account and status, and the size of its stored bytes (null when none are stored). */
export async function jobForOcr(em: EntityManager, jobId: string) {
  const [job] = await bound<{ account_id: string; status: string; size: number | null }>(
    em,
    sql`select j.account_id, j.status, octet_length(b.bytes) as size from ingest_job j left join ingest_blob b on b.job_id = j.id where j.id = ${jobId}`,
  );
  return job ?? null;
}

/** The account's own budgets (null = the configured default) and the pages its previews used since UTC midnight. */
export async function budgetRow(em: EntityManager, accountId: string) {
  const [row] = await bound<{ request: number | null; daily: number | null; used: number }>(
    em,
    // Failed previews count the pages they used (their row's pages is lowered to that).
    sql`select a.ocr_preview_max_pages as request, a.ocr_preview_daily_pages as daily,
            (select coalesce(sum(p.pages), 0)::int from provider_preview p
              where p.account_id = a.id and p.created_at >= date_trunc('day', now() at time zone 'UTC') at time zone 'UTC') as used
       from account a where a.id = ${accountId}`,
  );
  return row ?? null;
}

export async function insertPreview(tx: EntityManager, p: { id: string; accountId: string; sha256: string; contentType: string; pages: number }): Promise<void> {
  await bound(tx, sql`insert into provider_preview (id, account_id, sha256, content_type, pages, status) values (${p.id}, ${p.accountId}, ${p.sha256}, ${p.contentType}, ${p.pages}, 'running')`);
}

/** A running preview is alive: the settlement sweeper leaves its reservation alone (metering/reservations.queries.ts). */
export async function touchPreview(em: EntityManager, id: string): Promise<void> {
  await bound(em, sql`update provider_preview set heartbeat_at = now() where id = ${id} and status = 'running'`);
}

/** A preview's new status; with `pages`, the pages it is counted for. */
export async function markPreview(tx: EntityManager, id: string, status: PreviewStatus, pages?: number): Promise<void> {
  await bound(tx, sql`update provider_preview set status = ${status}, pages = coalesce(${pages ?? null}, pages) where id = ${id}`);
}

/** Ready previews past their retention (any account's) expire, and their text goes. */
export async function expirePreviews(tx: EntityManager, retentionMs: number): Promise<void> {
  await bound(tx, sql`with gone as (update provider_preview set status = 'expired' where status = 'ready' and created_at < now() - ${retentionMs} * interval '1 millisecond'
    returning id) delete from ocr_page where owner_id in (select id from gone)`);
}

const ready = (p: ExactPreview) => sql`account_id = ${p.accountId} and sha256 = ${p.sha256} and content_type = ${p.contentType}
  and status = 'ready' and created_at > now() - ${p.retentionMs} * interval '1 millisecond'`;

/** The latest ready preview of these bytes. */
export async function readyPreview(em: EntityManager, p: ExactPreview): Promise<string | null> {
  const [row] = await bound<{ id: string }>(em, sql`select id from provider_preview where ${ready(p)} order by created_at desc limit 1`);
  return row?.id ?? null;
}

/** Marks the latest ready preview of these bytes used and moves its pages to `ownerId`; false when there is none. */
export async function handOverPreview(tx: EntityManager, p: ExactPreview, ownerId: string): Promise<boolean> {
  const [row] = await bound<{ id: string }>(tx, sql`update provider_preview set status = 'used' where id = (
       select id from provider_preview where ${ready(p)} order by created_at desc limit 1 for update skip locked)
     returning id`);
  if (!row) return false;
  await bound(tx, sql`update ocr_page set owner_id = ${ownerId} where owner_id = ${row.id}`);
  return true;
}
