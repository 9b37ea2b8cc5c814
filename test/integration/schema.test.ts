import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dumpSchema } from '../../shared/db/schema-dump.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await db?.drop();
});

describe('docs/schema.sql', () => {
  it('is the schema of a freshly migrated database (regenerate it with `npm run schema`)', async () => {
    const committed = await readFile(new URL('../../docs/schema.sql', import.meta.url), 'utf8');
    expect(await dumpSchema(db.url)).toBe(committed);
  });
});
