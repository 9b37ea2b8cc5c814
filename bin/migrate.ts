// `npm run migrate`: applies committed migrations to DATABASE_URL (or the embedded PostgreSQL).
import { loadConfig } from '../platform/config.ts';
import { createOrm, migrate } from '../platform/db/orm.ts';
import { provideDatabase } from '../runners/local/infra.ts';
import { runMain } from '../platform/entrypoint.ts';

runMain(async () => {
  const config = loadConfig();
  const db = await provideDatabase(config, { log: (m) => process.stderr.write(`${m}\n`), reuseRunning: true });
  try {
    const orm = await createOrm(db.url);
    try {
      const applied = await migrate(orm);
      process.stdout.write(applied.length ? `applied: ${applied.join(', ')}\n` : 'schema is up to date\n');
    } finally {
      await orm.close();
    }
  } finally {
    await db.stop();
  }
});
