import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { probeDatabase } from '../../platform/db/connections.ts';
import type { Config } from '../../platform/config.ts';
import { startEmbeddedPostgres } from '../postgres/embedded.ts';
import { resolveTemporalCli } from '../temporal-server/cli.ts';
import { startTemporalDevServer } from '../temporal-server/dev-server.ts';
import { assertDatabaseReachable, assertTemporalReachable } from '../preflight.ts';

/** The database name used by the embedded PostgreSQL. */
export const EMBEDDED_DATABASE = 'cairn';

export type Provided<T> = T & { embedded: boolean; stop(): Promise<void> };

const noop = async () => {};

export function embeddedDatabaseUrl(config: Config): string {
  return `postgres://postgres:postgres@127.0.0.1:${config.embeddedPostgresPort}/${EMBEDDED_DATABASE}`;
}

async function answers(url: string): Promise<boolean> {
  return probeDatabase(url, 1000).then(() => true, () => false);
}

/**
 * DATABASE_URL when set; otherwise the embedded PostgreSQL under DATA_DIR. With `reuseRunning`, an
 * embedded server that is already up (started by `npm start`) is used instead of starting another
 * on the same data directory (operator commands run beside a running service).
 */
export async function provideDatabase(
  config: Config,
  opts: { log: (m: string) => void; reuseRunning?: boolean },
): Promise<Provided<{ url: string }>> {
  if (config.databaseUrl) {
    await assertDatabaseReachable(config.databaseUrl);
    return { url: config.databaseUrl, embedded: false, stop: noop };
  }
  const url = embeddedDatabaseUrl(config);
  if (opts.reuseRunning && (await answers(url))) return { url, embedded: true, stop: noop };
  const db = await startEmbeddedPostgres({
    dataDir: config.dataDir,
    port: config.embeddedPostgresPort,
    database: EMBEDDED_DATABASE,
    log: opts.log,
  });
  return { url: db.url, embedded: true, stop: db.stop };
}

/** TEMPORAL_ADDRESS when set; otherwise the Temporal dev server with its SQLite file under DATA_DIR. */
export async function provideTemporal(
  config: Config,
  opts: { log: (m: string) => void },
): Promise<Provided<{ address: string; uiUrl: string | undefined }>> {
  if (config.temporal.address) {
    await assertTemporalReachable(config.temporal.address);
    return { address: config.temporal.address, uiUrl: config.temporal.uiUrl, embedded: false, stop: noop };
  }
  const cli = await resolveTemporalCli({ configured: config.temporal.cli, log: opts.log });
  const server = await startTemporalDevServer({
    cli,
    dbFile: path.join(config.dataDir, 'temporal', 'temporal.sqlite'),
    ip: '127.0.0.1',
    port: config.temporal.devPort,
    uiPort: config.temporal.uiPort,
    namespace: config.temporal.namespace,
    log: opts.log,
  });
  return { address: server.address, uiUrl: server.uiUrl, embedded: true, stop: server.stop };
}

/** For operator commands: the Temporal the running service uses. */
export function temporalAddressFor(config: Config): string {
  return config.temporal.address ?? `127.0.0.1:${config.temporal.devPort}`;
}

/**
 * Keeps the generated local account's password out of the terminal (and its scrollback and logs):
 * written to DATA_DIR/local-account.txt, readable by the owner only (0600, in a directory created 0700
 * when missing). Returns the file's path, which is what `npm start` prints.
 */
export async function writeLocalCredentials(dataDir: string, account: { email: string; password: string }): Promise<string> {
  await mkdir(dataDir, { recursive: true, mode: 0o700 });
  const file = path.join(dataDir, 'local-account.txt');
  await writeFile(file, `email     ${account.email}\npassword  ${account.password}\n`, { mode: 0o600 });
  await chmod(file, 0o600); // an older file keeps its mode on rewrite
  return file;
}
