import { Migration } from '@mikro-orm/migrations';

/**
 * When a job's processing first began (its first build or fetch attempt), so a caller can tell a job
 * that waits from one that runs (the public status stays `queued` until the job ends, as the contract
 * lists), and a partial index to count the jobs waiting ahead of one in its account's line.
 */
export class Migration0038JobStarted extends Migration {
  override name = '0038-job-started';

  override up(): void {
    this.addSql('alter table ingest_job add column started_at timestamptz;');
    this.addSql(`update ingest_job set started_at = coalesce(completed_at, updated_at) where attempts > 0 or status <> 'queued';`);
    this.addSql(`create index ingest_job_waiting_idx on ingest_job (account_id, created_at, id) where status = 'queued' and started_at is null and kind <> 'source_deletion';`);
  }

  override down(): void {
    this.addSql('drop index ingest_job_waiting_idx;');
    this.addSql('alter table ingest_job drop column started_at;');
  }
}
