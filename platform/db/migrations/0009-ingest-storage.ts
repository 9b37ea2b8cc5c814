import { Migration } from '@mikro-orm/migrations';

/**
 * Stored upload bytes are read back in slices (platform/db/sql.ts readLongBytes). Uncompressed TOAST
 * storage lets each slice fetch only its own chunks instead of decompressing the whole value per slice;
 * the bytes live only until their job ends, so the lost compression costs little.
 */
export class Migration0009IngestStorage extends Migration {
  override name = '0009-ingest-storage';

  override up(): void {
    this.addSql('alter table ingest_blob alter column bytes set storage external;');
  }

  override down(): void {
    this.addSql('alter table ingest_blob alter column bytes set storage extended;');
  }
}
