import { Migration } from '@mikro-orm/migrations';

export class Migration0001Init extends Migration {
  override name = '0001-init';

  override up(): void {
    // Extensions used by retrieval (trigram matching, accent folding); both ship with PostgreSQL contrib.
    this.addSql('create extension if not exists pg_trgm;');
    this.addSql('create extension if not exists unaccent;');
    this.addSql(`create table self_check (
      id text primary key,
      requested_by text not null,
      worker_identity text not null,
      checked_at timestamptz not null
    );`);
  }

  override down(): void {
    this.addSql('drop table if exists self_check;');
  }
}
