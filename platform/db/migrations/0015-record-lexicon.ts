import { Migration } from '@mikro-orm/migrations';

/**
 * Near spellings of names (core/retrieval) are looked up in a per-account lexicon of the words of
 * source excerpts, with a trigram index on the word (PostgreSQL's documented way to suggest
 * spellings, pg_trgm F.35.5), instead of a trigram index over all excerpt text: that index cost about
 * a quarter of PostgreSQL's CPU per stored record, while an account's vocabulary grows far slower than
 * its text (docs/decisions/0017-ingest-build-step.md). Existing excerpts fill the
 * lexicon here; new ones add their words as they are stored (core/ingest/prepare/lexicon.ts).
 */
export class Migration0015RecordLexicon extends Migration {
  override name = '0015-record-lexicon';

  override up(): void {
    this.addSql(`create table record_lexicon (
      account_id uuid not null references account(id) on delete cascade,
      word text not null,
      primary key (account_id, word)
    );`);
    this.addSql('create index record_lexicon_trgm_idx on record_lexicon using gin(word gin_trgm_ops);');
    // The same words lexiconWords() takes: lower-cased runs of letters and digits, three or more long,
    // with at least one letter.
    this.addSql(`insert into record_lexicon (account_id, word)
      select distinct r.account_id, w from record r, regexp_split_to_table(lower(r.text), '[^[:alnum:]]+') w
       where r.kind = 'excerpt' and length(w) >= 3 and w ~ '[[:alpha:]]'
      on conflict do nothing;`);
    this.addSql('drop index if exists record_excerpt_trgm_idx;');
  }

  override down(): void {
    this.addSql(`create index if not exists record_excerpt_trgm_idx on record using gin(text gin_trgm_ops) where kind = 'excerpt';`);
    this.addSql('drop table if exists record_lexicon;');
  }
}
