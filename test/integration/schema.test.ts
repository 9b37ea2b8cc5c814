import { readFile } from 'node:fs/promises';
import { describe, expect, inject, it } from 'vitest';
import { dumpFreshSchema } from '../../runners/postgres/schema-dump.ts';

describe('docs/schema.sql', () => {
  it('is the schema of a freshly migrated database (regenerate it with `npm run schema`)', async () => {
    const committed = await readFile(new URL('../../docs/schema.sql', import.meta.url), 'utf8');
    expect(await dumpFreshSchema(inject('adminDatabaseUrl'))).toBe(committed);
  });
});
