import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The statements of the citation key (query_secret, one row); how handles are sealed is in citations.ts.

/** The database's citation key, stored as `fresh` when there is none yet (whoever inserts first wins). */
export async function citationKey(em: EntityManager, fresh: Buffer): Promise<Buffer> {
  await bound(em, sql`insert into query_secret (id, key) values (1, ${fresh}) on conflict (id) do nothing`);
  const [row] = await bound<{ key: Buffer }>(em, sql`select key from query_secret where id = 1`);
  return row!.key;
}
