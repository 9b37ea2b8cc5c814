import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../../db/sql.ts';
import type { PageText } from './provider.ts';

// The recognised pages of an owner (an ingest job or a provider preview), table ocr_page (migration 0029).

export async function storedPages(em: EntityManager, ownerId: string): Promise<PageText[]> {
  return bound<PageText>(em, 'select page, text, confidence from ocr_page where owner_id = ? order by page', [ownerId]);
}

/** Stores pages (a page already stored for the owner is kept as it is). */
export async function storePages(em: EntityManager, owner: { id: string; accountId: string }, pages: PageText[], reservationId: string): Promise<void> {
  await bound(
    em,
    `insert into ocr_page (owner_id, page, account_id, text, confidence, reservation_id)
     select ?, p.page, ?, p.text, p.confidence, ? from unnest(?::int[], ?::text[], ?::int[]) as p(page, text, confidence)
     on conflict (owner_id, page) do nothing`,
    [owner.id, owner.accountId, reservationId, pages.map((p) => p.page), pages.map((p) => p.text), pages.map((p) => p.confidence)],
  );
}
