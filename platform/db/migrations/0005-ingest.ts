import { Migration } from '@mikro-orm/migrations';

export class Migration0005Ingest extends Migration {
  override name = '0005-ingest';

  override up(): void {
    // What was submitted, kept so a retried or resumed job works from the same input.
    this.addSql(`alter table ingest_job
      add column source_url text,
      add column filename text,
      add column content_type text,
      add column dated_at date,
      add column title text,
      add column size_bytes bigint,
      add column record_counts jsonb,
      add column quarantine_reason text;`);

    // Source bytes (uploads at submission, fetched pages in the fetch activity): Temporal payloads
    // carry only the job id.
    this.addSql(`create table ingest_blob (
      job_id uuid primary key references ingest_job(id) on delete cascade,
      account_id uuid not null references account(id) on delete cascade,
      bytes bytea not null,
      sha256 text not null,
      size_bytes bigint not null,
      content_type text not null,
      final_url text,
      created_at timestamptz not null default now()
    );`);

    // A source is identified by the id of the ingest job that created it (spec 2.4 source_ids).
    this.addSql(`create table source (
      id uuid primary key references ingest_job(id) on delete cascade,
      account_id uuid not null references account(id) on delete cascade,
      kind text not null check (kind in ('url', 'file')),
      url text,
      filename text,
      content_type text not null,
      title text,
      dated_at date,
      status text not null check (status in ('active', 'quarantined', 'deleted')),
      quarantine_reason text,
      content_hash text not null,
      text text not null,
      sections jsonb not null,
      audience text,
      created_at timestamptz not null default now(),
      deleted_at timestamptz
    );`);
    this.addSql('create index source_account_idx on source(account_id, created_at desc);');

    // Records: source excerpts, facts and relationship links, each with the exact span of the source
    // text it came from. Ids are deterministic (source, kind, span), so reprocessing replaces, never adds.
    this.addSql(`create table record (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      source_id uuid not null references source(id) on delete cascade,
      kind text not null check (kind in ('excerpt', 'fact', 'link')),
      text text not null,
      start_offset integer not null,
      end_offset integer not null,
      section_path text[] not null default '{}',
      page integer,
      subject text,
      link_type text,
      link_from text,
      link_to text,
      content_hash text not null,
      tsv tsvector generated always as (to_tsvector('english', text)) stored,
      created_at timestamptz not null default now()
    );`);
    this.addSql('create index record_source_idx on record(source_id);');
    this.addSql('create index record_account_kind_idx on record(account_id, kind);');
    this.addSql('create index record_tsv_idx on record using gin(tsv);');
    this.addSql('create index record_text_trgm_idx on record using gin(text gin_trgm_ops);');
  }

  override down(): void {
    this.addSql('drop table if exists record;');
    this.addSql('drop table if exists source;');
    this.addSql('drop table if exists ingest_blob;');
  }
}
