import { MikroORM, PostgreSqlDriver, type Options } from '@mikro-orm/postgresql';
import { Migrator } from '@mikro-orm/migrations';
import { dedicatedConnection } from './connections.ts';
import { entities } from './entities/index.ts';
import { migrationsList } from './migrations/index.ts';
import { bound, sql } from './sql.ts';
import type { Logger } from '../logger.ts';

export type Orm = MikroORM;

export type OrmConnections = {
  /** application_name of the pool's sessions: which process a backend serves (pg_stat_activity). */
  applicationName?: string;
};

export function ormOptions(databaseUrl: string, logger?: Logger, connections: OrmConnections = {}): Options {
  const { applicationName } = connections;
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
    // Merged into the pg Pool's options.
    driverOptions: applicationName ? { application_name: applicationName } : {},
    debug: false,
    // MikroORM's own messages (migrator progress) go to our logger at debug, never straight to stdout.
    logger: (message: string) => logger?.debug({ component: 'orm' }, message),
    ensureDatabase: false,
    discovery: { warnWhenNoEntities: true },
  };
}

/** Connects lazily: a process can start (and report not-ready) while PostgreSQL is down. */
export async function createOrm(databaseUrl: string, logger?: Logger, connections?: OrmConnections): Promise<Orm> {
  return MikroORM.init(ormOptions(databaseUrl, logger, connections));
}

/** Arbitrary constant key: every Cairn process migrating the same database takes the same lock. */
const MIGRATION_LOCK_KEY = 727_246_001;

/**
 * Applies pending migrations. Several processes may start at once (api replicas, `npm start`, admin
 * commands), so the run is serialised with a PostgreSQL advisory lock held on its own connection.
 */
export async function migrate(orm: Orm): Promise<string[]> {
  const lock = dedicatedConnection(orm.config.get('clientUrl')!);
  await lock.connect();
  try {
    await lock.query('select pg_advisory_lock($1)', [MIGRATION_LOCK_KEY]);
    const applied = await orm.migrator.up();
    return applied.map((m) => m.name);
  } finally {
    await lock.end(); // ending the session releases the lock
  }
}

export async function pingDatabase(orm: Orm): Promise<void> {
  await bound(orm.em.fork(), sql`select 1`);
}
