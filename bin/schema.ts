// `npm run schema`: writes docs/schema.sql, the schema of a freshly migrated database
// (shared/db/schema-dump.ts). On DATABASE_URL's server in a throwaway database, otherwise on a
// throwaway embedded PostgreSQL; test/integration/schema.test.ts checks the committed file.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import pg from 'pg';
import { ensureDatabase } from '../shared/db/embedded.ts';
import { createOrm, migrate } from '../shared/db/orm.ts';
import { dumpSchema } from '../shared/db/schema-dump.ts';
import { scratchPostgres } from '../shared/local/ephemeral.ts';
import { runMain } from '../shared/process.ts';

runMain(async () => {
  const server = await scratchPostgres((m) => process.stderr.write(`${m}\n`), 'cairn-schema-');
  const name = `cairn_schema_${randomBytes(4).toString('hex')}`;
  const url = new URL(server.adminUrl);
  url.pathname = `/${name}`;
  try {
    await ensureDatabase(url.toString());
    const orm = await createOrm(url.toString());
    try {
      await migrate(orm);
    } finally {
      await orm.close();
    }
    await writeFile(new URL('../docs/schema.sql', import.meta.url), await dumpSchema(url.toString()));
    process.stdout.write('wrote docs/schema.sql\n');
  } finally {
    const admin = new pg.Client({ connectionString: server.adminUrl });
    await admin.connect();
    await admin.query(`drop database if exists "${name}" with (force)`).finally(() => admin.end());
    await server.stop();
  }
});
