import type { EntityManager } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';

/**
 * Runs SQL with real bind parameters ($1, $2, ...) on the EntityManager's connection, inside its
 * transaction when it has one. MikroORM's `execute` formats parameters into the SQL text, which for
 * large values (a 50 MB upload, a document's text, a batch of records) costs many times their size in
 * memory and seconds of escaping; those statements go through here. `?` placeholders are numbered in
 * order, so the SQL must not contain a literal `?`.
 */
export async function bound<T = Record<string, unknown>>(em: EntityManager, sql: string, params: unknown[]): Promise<T[]> {
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  if (n !== params.length) throw new Error(`bound(): ${n} placeholders but ${params.length} parameters`);
  const ctx = em.getTransactionContext<{ executeQuery: (q: CompiledQuery) => Promise<{ rows: unknown[] }> }>();
  const client = ctx ?? (em.getConnection().getClient() as unknown as { executeQuery: (q: CompiledQuery) => Promise<{ rows: unknown[] }> });
  const res = await client.executeQuery(CompiledQuery.raw(text, params));
  return res.rows as T[];
}
