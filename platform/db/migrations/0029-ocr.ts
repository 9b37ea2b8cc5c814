import { Migration } from '@mikro-orm/migrations';

/**
 * OCR of scanned PDF pages (core/ingest/ocr). `ocr_page`: the recognised text of a page, owned by an
 * ingest job (live OCR, kept until the job's build commits) or by a provider-backed preview (kept for
 * its retention, so queueing the same bytes reuses it), with the credit reservation that paid for it.
 * `provider_preview`: each provider-backed preview (its id is its credit reservation), for the daily
 * provider budget and for reuse; a ready preview's text is removed when it expires (status 'expired'). The per-account budgets override OCR_PREVIEW_MAX_PAGES and
 * OCR_PREVIEW_DAILY_PAGES when set.
 */
export class Migration0029Ocr extends Migration {
  override name = '0029-ocr';

  override up(): void {
    this.addSql(`create table ocr_page (
      owner_id uuid not null,
      page integer not null check (page > 0),
      account_id uuid not null references account(id) on delete cascade,
      text text not null,
      confidence integer not null,
      reservation_id uuid,
      primary key (owner_id, page)
    );`);
    this.addSql(`create table provider_preview (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      sha256 text not null,
      content_type text not null,
      pages integer not null check (pages >= 0),
      status text not null check (status in ('running', 'ready', 'failed', 'used', 'expired')),
      created_at timestamptz not null default now()
    );`);
    this.addSql('create index provider_preview_account_idx on provider_preview (account_id, created_at);');
    this.addSql(`create index provider_preview_ready_idx on provider_preview (created_at) where status = 'ready';`);
    this.addSql('alter table account add column ocr_preview_max_pages integer check (ocr_preview_max_pages >= 0), add column ocr_preview_daily_pages integer check (ocr_preview_daily_pages >= 0);');
  }

  override down(): void {
    this.addSql('drop table provider_preview;');
    this.addSql('drop table ocr_page;');
    this.addSql('alter table account drop column ocr_preview_max_pages, drop column ocr_preview_daily_pages;');
  }
}
