// `npm run schema`: writes docs/schema.sql, the schema of a freshly migrated database
// (runners/postgres/schema-dump.ts), made for the purpose and dropped again on the server `npm run migrate`
// uses (DATABASE_URL, or the embedded PostgreSQL). test/integration/schema.test.ts checks the file.
import { writeFile } from 'node:fs/promises';
import { loadConfig } from '../platform/config.ts';
import { dumpFreshSchema } from '../runners/postgres/schema-dump.ts';
import { provideDatabase } from '../runners/local/infra.ts';
import { runMain } from '../platform/entrypoint.ts';

runMain(async () => {
  const server = await provideDatabase(loadConfig(), { log: (m) => process.stderr.write(`${m}\n`), reuseRunning: true });
  try {
    await writeFile(new URL('../docs/schema.sql', import.meta.url), await dumpFreshSchema(server.url));
    process.stdout.write('wrote docs/schema.sql\n');
  } finally {
    await server.stop();
  }
});
