import { MikroORM, PostgreSqlDriver, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { entities } from './entities/index.ts';
import { migrationsList } from './migrations/index.ts';
import type { Logger } from '../logger.ts';

export type Orm = MikroORM;

export function ormOptions(databaseUrl: string, logger?: Logger): Options {
  return {
    driver: PostgreSqlDriver,
    clientUrl: databaseUrl,
    entities,
    extensions: [Migrator],
    migrations: {
      migrationsList,
      tableName: 'mikro_orm_migrations',
      transactional: true,
      allOrNothing: true,
      snapshot: false,
    },
    // The global EntityManager is never used: requests and activities fork their own.
    allowGlobalContext: false,
    pool: { min: 0, max: 10 },
    debug: false,
    logger: logger ? (message: string) => logger.debug({ orm: true }, message) : undefined,
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: true },
  };
}

/** Connects lazily: a process can start (and report not-ready) while PostgreSQL is down. */
export async function createOrm(databaseUrl: string, logger?: Logger): Promise<Orm> {
  return MikroORM.init(ormOptions(databaseUrl, logger));
}

export async function migrate(orm: Orm): Promise<string[]> {
  const applied = await orm.migrator.up();
  return applied.map((m) => m.name);
}

export async function pingDatabase(orm: Orm): Promise<void> {
  await orm.em.getConnection().execute('select 1');
}
