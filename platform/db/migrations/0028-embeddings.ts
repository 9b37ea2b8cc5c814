import { Migration } from '@mikro-orm/migrations';

/**
 * Optional embeddings (EMBEDDINGS_*, core/retrieval/embeddings.ts): a message's and a source
 * excerpt's vector, float32 bytes of unit length, with the model that made it. Written with the row it
 * belongs to (a message when its event commits, a record when its source is built); null when no
 * provider is configured or it did not answer. Not indexed: the API compares vectors in memory.
 */
export class Migration0028Embeddings extends Migration {
  override name = '0028-embeddings';

  override up(): void {
    for (const t of ['memory_message', 'record']) this.addSql(`alter table ${t} add column embedding bytea, add column embedding_model text;`);
  }

  override down(): void {
    for (const t of ['memory_message', 'record']) this.addSql(`alter table ${t} drop column embedding, drop column embedding_model;`);
  }
}
