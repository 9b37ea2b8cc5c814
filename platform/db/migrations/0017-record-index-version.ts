import { Migration } from '@mikro-orm/migrations';

/**
 * A per-account version of what full-text retrieval over source records can see, for the API's
 * in-memory copy of the account's search index (core/retrieval/search-index.ts): the copy is used only while
 * its version equals the stored one. Records and their record_term rows change only in the
 * transaction that writes their source row, so a change to any source row (insert, status, audience,
 * deletion) is what moves the version.
 *
 * The trigger is a deferred constraint trigger: it runs at commit, so an ingest transaction that
 * writes a large source holds the version row's lock for an instant, not for the whole transaction
 * (concurrent ingests of one account would otherwise wait for each other). On delete it only updates:
 * when the account itself is being deleted its version row has already gone with it (cascade).
 */
export class Migration0017RecordIndexVersion extends Migration {
  override name = '0017-record-index-version';

  override up(): void {
    this.addSql(`create table record_index_version (
      account_id uuid primary key references account(id) on delete cascade,
      version bigint not null
    );`);
    this.addSql(`create function cairn_bump_record_index_version() returns trigger language plpgsql as $$
      begin
        if tg_op = 'DELETE' then
          update record_index_version set version = version + 1 where account_id = old.account_id;
        else
          insert into record_index_version (account_id, version) values (new.account_id, 1)
            on conflict (account_id) do update set version = record_index_version.version + 1;
        end if;
        return null;
      end $$;`);
    this.addSql(`create constraint trigger source_record_index_version after insert or update or delete on source
      deferrable initially deferred for each row execute function cairn_bump_record_index_version();`);
  }

  override down(): void {
    this.addSql('drop trigger if exists source_record_index_version on source;');
    this.addSql('drop function if exists cairn_bump_record_index_version();');
    this.addSql('drop table if exists record_index_version;');
  }
}
