import type { Config } from '../../platform/config.ts';
import { createOrm, migrate, type Orm } from '../../platform/db/orm.ts';
import { provideDatabase } from '../../runners/local/infra.ts';
import { createLogger, type Logger } from '../../platform/logger.ts';

export type AdminContext = { config: Config; orm: Orm; logger: Logger; out(value: unknown): void };

/**
 * Opens what operator commands need: the service's database (DATABASE_URL, or the embedded one of a
 * running `npm start`, or a temporary embedded one), migrated to the current schema.
 */
export async function withAdminContext<T>(config: Config, fn: (ctx: AdminContext) => Promise<T>): Promise<T> {
  const logger = createLogger({ logLevel: config.logLevel === 'info' ? 'warn' : config.logLevel }, { name: 'admin' });
  const db = await provideDatabase(config, { log: (m) => process.stderr.write(`${m}\n`), reuseRunning: true });
  try {
    const orm = await createOrm(db.url, logger);
    try {
      await migrate(orm);
      return await fn({ config, orm, logger, out: (v) => process.stdout.write(`${JSON.stringify(v)}\n`) });
    } finally {
      await orm.close();
    }
  } finally {
    await db.stop();
  }
}
