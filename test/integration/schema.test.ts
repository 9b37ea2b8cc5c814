import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { databaseRoutines, dumpSchema, freshDatabase } from '../../runners/postgres/schema-dump.ts';
import { dedicatedConnection } from '../../platform/db/connections.ts';
import { Migration0030Routines } from '../../platform/db/migrations/0030-routines.ts';
import { routineSources } from '../../platform/db/migrations/routines.ts';

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
    // migration that changes one applies the file (platform/db/migrations/routines.ts).
    const sources = routineSources();
    expect(sources.filter((r) => r.kind === 'function').length).toBeGreaterThan(10);
    expect(sources.filter((r) => r.kind === 'trigger').length).toBeGreaterThan(5);
    expect(await databaseRoutines(db.url)).toEqual(sources);
  });

  it('the migration that applies the files goes down (the positional message write) and up again', async () => {
    const run = async (step: 'up' | 'down') => {
      const m = new Migration0030Routines(null as never, null as never);
      m[step]();
      const client = dedicatedConnection(db.url);
      await client.connect();
      try {
        await client.query('begin');
        for (const q of m.getQueries()) await client.query(String(q));
        await client.query('commit');
      } finally {
        await client.end();
      }
    };
    const addMessages = async () => (await databaseRoutines(db.url)).find((r) => r.name === 'cairn_add_messages')!.text;
    await run('down');
    expect(await addMessages()).toContain('p_hashes text[]');
    await run('up');
    expect(await databaseRoutines(db.url)).toEqual(routineSources());
  });
});
