import { Migration } from '@mikro-orm/migrations';

/**
 * The trigram index (near spellings of names in queries, core/retrieval) covers source excerpts
 * only. Excerpts partition the whole source text, and facts and links are spans of that same text, so
 * every word is still indexed once; indexing facts and links too repeated most of the text and cost
 * more per stored record than everything else about storing it (docs/decisions/0017-ingest-build-step.md).
 */
export class Migration0012RecordTrigramExcerpts extends Migration {
  override name = '0012-record-trigram-excerpts';

  override up(): void {
    this.addSql('drop index if exists record_text_trgm_idx;');
    this.addSql(`create index record_excerpt_trgm_idx on record using gin(text gin_trgm_ops) where kind = 'excerpt';`);
  }

  override down(): void {
    this.addSql('drop index if exists record_excerpt_trgm_idx;');
    this.addSql('create index record_text_trgm_idx on record using gin(text gin_trgm_ops);');
  }
}
