import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { databaseRoutines, dumpSchema, freshDatabase } from '../../runners/postgres/schema-dump.ts';
import { routineSources } from '../../platform/db/routines.ts';

describe('a freshly migrated database', () => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    db = await freshDatabase(inject('adminDatabaseUrl'));
  }, 120_000);
  afterAll(async () => {
    await db?.drop();
  });

  it('has the schema of docs/schema.sql (regenerate it with `npm run schema`)', async () => {
    const committed = await readFile(new URL('../../docs/schema.sql', import.meta.url), 'utf8');
    expect(await dumpSchema(db.url)).toBe(committed);
  });

  it('has exactly the functions and triggers of platform/db/functions and platform/db/triggers, as written there', async () => {
    // A file must read as PostgreSQL prints its object (pg_get_functiondef, pg_get_triggerdef); a
    // migration that changes one applies the file (platform/db/routines.ts).
    const sources = routineSources();
    expect(sources.filter((r) => r.kind === 'function').length).toBeGreaterThan(10);
    expect(sources.filter((r) => r.kind === 'trigger').length).toBeGreaterThan(5);
    expect(await databaseRoutines(db.url)).toEqual(sources);
  });
});
