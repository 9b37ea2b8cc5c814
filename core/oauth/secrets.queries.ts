import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The authorization server's key material (oauth_secret, one row); secrets.ts makes it.

/** Stores the secrets (JSON text) unless a process stored them first. */
export async function storeSecretsOnce(em: EntityManager, value: string): Promise<void> {
  await bound(em, sql`insert into oauth_secret (name, value) values ('authorization-server', ${value}::jsonb) on conflict (name) do nothing`);
}

export async function storedSecrets<T>(em: EntityManager): Promise<T> {
  const [row] = await bound<{ value: T }>(em, sql`select value from oauth_secret where name = 'authorization-server'`);
  return row!.value;
}
