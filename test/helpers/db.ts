import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { inject } from 'vitest';
import { ensureDatabase } from '../../runners/postgres/embedded.ts';
import { createOrm, migrate, type Orm } from '../../platform/db/orm.ts';

export type TestDatabase = { url: string; orm: Orm; drop(): Promise<void> };

/** An empty database (no schema), dropped by the returned function. */
export async function createTestDatabaseRaw(): Promise<{ url: string; drop(): Promise<void> }> {
  const admin = new URL(inject('adminDatabaseUrl'));
  const name = `cairn_test_${randomBytes(6).toString('hex')}`;
  const url = new URL(admin);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  return {
    url: url.toString(),
    async drop() {
      const client = new pg.Client({ connectionString: admin.toString() });
      await client.connect();
      try {
        await client.query(`drop database if exists "${name}" with (force)`);
      } finally {
        await client.end();
      }
    },
  };
}

/** A fresh, migrated database of this test file's own, dropped at the end. */
export async function createTestDatabase(): Promise<TestDatabase> {
  const raw = await createTestDatabaseRaw();
  const orm = await createOrm(raw.url);
  await migrate(orm);
  return {
    url: raw.url,
    orm,
    async drop() {
      await orm.close();
      await raw.drop();
    },
  };
}
