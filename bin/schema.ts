// `npm run schema`: writes docs/schema.sql, the schema of a freshly migrated database
// (shared/db/schema-dump.ts), made for the purpose and dropped again on the server `npm run migrate`
// uses (DATABASE_URL, or the embedded PostgreSQL). test/integration/schema.test.ts checks the file.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { loadConfig } from '../shared/config.ts';
import { dedicatedConnection } from '../shared/db/connections.ts';
import { ensureDatabase } from '../shared/db/embedded.ts';
import { createOrm, migrate } from '../shared/db/orm.ts';
import { dumpSchema } from '../shared/db/schema-dump.ts';
import { provideDatabase } from '../shared/local/infra.ts';
import { runMain } from '../shared/entrypoint.ts';

runMain(async () => {
  const server = await provideDatabase(loadConfig(), { log: (m) => process.stderr.write(`${m}\n`), reuseRunning: true });
  const scratch = new URL(server.url);
  const name = `cairn_schema_${randomBytes(4).toString('hex')}`;
  scratch.pathname = `/${name}`;
  try {
    await ensureDatabase(scratch.toString());
    const orm = await createOrm(scratch.toString());
    try {
      await migrate(orm);
    } finally {
      await orm.close();
    }
    await writeFile(new URL('../docs/schema.sql', import.meta.url), await dumpSchema(scratch.toString()));
    process.stdout.write('wrote docs/schema.sql\n');
  } finally {
    const admin = dedicatedConnection(server.url);
    await admin.connect();
    await admin.query(`drop database if exists "${name}" with (force)`).finally(() => admin.end());
    await server.stop();
  }
});
