import { Migration } from '@mikro-orm/migrations';

export class Migration0003IngestJobs extends Migration {
  override name = '0003-ingest-jobs';

  override up(): void {
    this.addSql(`create table ingest_job (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      kind text not null check (kind in ('url', 'file', 'source_deletion')),
      status text not null check (status in ('queued', 'running', 'succeeded', 'failed', 'quarantined')),
      idempotency_key text,
      request_hash text,
      source_id uuid,
      attempts integer not null default 0,
      failure jsonb,
      -- Millisecond precision, as JavaScript dates have: page cursors carry created_at exactly.
      created_at timestamptz not null default date_trunc('milliseconds', now()),
      updated_at timestamptz not null default now(),
      completed_at timestamptz,
      unique (account_id, idempotency_key)
    );`);
    // Keyset pagination: newest first, ties broken by id.
    this.addSql('create index ingest_job_account_page_idx on ingest_job(account_id, created_at desc, id desc);');
  }

  override down(): void {
    this.addSql('drop table if exists ingest_job;');
  }
}
