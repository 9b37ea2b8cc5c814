import { Migration } from '@mikro-orm/migrations';

/**
 * Fewer foreign-key checks per stored record, the same cascades. A foreign key is checked row by row
 * (a lookup and a share lock on the referenced row): in the ingest benchmark's insert statement the
 * three checks (record → account, record → source, record_term → source) were a quarter of its
 * time. Now:
 * - record → source is one composite key (source_id, account_id) → source (id, account_id): one check
 *   instead of two, which also makes a record's account its source's (the account's deletion still
 *   reaches records through their source, which it deletes);
 * - record_term has no foreign key: its rows go out with their source through a statement-level
 *   trigger on source deletion (one DELETE per statement, including the cascade from ingest_job and
 *   account deletion), and with their records in ingest and source deletion (core/ingest/build/build.ts).
 *   Only code inserts record_term rows, in the statement that inserts their records.
 */
export class Migration0021RecordForeignKeys extends Migration {
  override name = '0021-record-foreign-keys';

  override up(): void {
    this.addSql('alter table source add constraint source_id_account_key unique (id, account_id);');
    this.addSql('alter table record drop constraint record_account_id_fkey, drop constraint record_source_id_fkey;');
    this.addSql(`alter table record add constraint record_source_account_fkey foreign key (source_id, account_id)
      references source (id, account_id) on delete cascade;`);
    this.addSql('alter table record_term drop constraint record_term_source_id_fkey;');
    this.addSql(`create function cairn_delete_source_terms() returns trigger language plpgsql as $$
      begin
        delete from record_term t using gone where t.source_id = gone.id;
        return null;
      end $$;`);
    this.addSql(`create trigger source_delete_terms after delete on source referencing old table as gone
      for each statement execute function cairn_delete_source_terms();`);
  }

  override down(): void {
    this.addSql('drop trigger if exists source_delete_terms on source;');
    this.addSql('drop function if exists cairn_delete_source_terms();');
    this.addSql('alter table record_term add constraint record_term_source_id_fkey foreign key (source_id) references source (id) on delete cascade;');
    this.addSql('alter table record drop constraint record_source_account_fkey;');
    this.addSql('alter table record add constraint record_account_id_fkey foreign key (account_id) references account (id) on delete cascade;');
    this.addSql('alter table record add constraint record_source_id_fkey foreign key (source_id) references source (id) on delete cascade;');
    this.addSql('alter table source drop constraint source_id_account_key;');
  }
}
