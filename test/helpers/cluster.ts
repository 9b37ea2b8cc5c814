import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { inject } from 'vitest';
import { spawnCluster, type ClusterProcess } from '../../runners/cluster/spawn.ts';
import { createTestDatabaseRaw } from './db.ts';


export type RunningCluster = ClusterProcess & { databaseUrl: string };

/**
 * `npm run cluster` on a database of its own (empty: its APIs migrate it at start-up, all at once),
 * with its own Temporal databases and data directory, on a random CLUSTER_PORT; `stop` drops them all.
 */
export async function startCluster(env: Record<string, string> = {}): Promise<RunningCluster> {
  const db = await createTestDatabaseRaw();
  const name = new URL(db.url).pathname.slice(1);
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cairn-cluster-'));
  const cleanup = async () => {
    await db.drop();
    await dropDatabases([`${name}_temporal`, `${name}_temporal_vis`]);
    await rm(dataDir, { recursive: true, force: true });
  };
  try {
    const cluster = await spawnCluster({
      DATABASE_URL: db.url, DBNAME: `${name}_temporal`, VISIBILITY_DBNAME: `${name}_temporal_vis`, DATA_DIR: dataDir,
      // Below 20000, where freePort() (test/helpers/ephemeral.ts) gives the test run's other servers theirs.
      CLUSTER_PORT: String(12_000 + Math.floor(Math.random() * 80) * 100), LOG_LEVEL: 'warn', ...env,
    });
    return {
      ...cluster, databaseUrl: db.url,
      async stop() {
        await cluster.stop();
        await cleanup();
      },
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

async function dropDatabases(names: string[]) {
  const client = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
  await client.connect();
  try {
    for (const n of names) await client.query(`drop database if exists "${n}" with (force)`);
  } finally {
    await client.end();
  }
}
