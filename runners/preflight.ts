import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import { probeDatabase } from '../platform/db/connections.ts';
import { ActionableError } from '../platform/entrypoint.ts';

// Checks made before `npm start` and the operator commands start anything, so that a predictable
// failure is reported as what failed and what to do instead of a child's stack or "undefined".

const run = promisify(execFile);

/** Whether a process with this id exists (signal 0 only checks; EPERM still means it exists). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * The embedded PostgreSQL's data directory must not be held by another server: PostgreSQL's lock file
 * (postmaster.pid: pid on the first line, port on the fourth) names a running one. Another `npm
 * start` or operator command on the same DATA_DIR is the usual cause.
 */
export function assertDataDirFree(dataDir: string): void {
  const lock = path.join(dataDir, 'postgres', 'postmaster.pid');
  if (!existsSync(lock)) return;
  const [pidLine, , , portLine] = readFileSync(lock, 'utf8').split('\n');
  const pid = Number(pidLine);
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return; // stale: PostgreSQL clears it itself
  throw new ActionableError(
    `the data directory ${path.resolve(dataDir)} is in use by another run: its PostgreSQL (pid ${pid}, port ${portLine?.trim() || '?'}) is running. ` +
      'Stop that `npm start` first (Ctrl-C in its terminal), or give this run its own DATA_DIR (and ports). ' +
      'Operator commands use a running service\'s database only when EMBEDDED_POSTGRES_PORT matches the port above.',
  );
}

/** A port this run will listen on must be free. */
export async function assertPortFree(host: string, port: number, variable: string): Promise<void> {
  if (port === 0) return;
  const problem = await new Promise<NodeJS.ErrnoException | null>((resolve) => {
    const server = net.createServer();
    server.once('error', (err: NodeJS.ErrnoException) => resolve(err));
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve(null)));
  });
  if (!problem) return;
  if (problem.code === 'EADDRINUSE') {
    throw new ActionableError(
      `port ${port} (${variable}) on ${host} is already in use, perhaps by another \`npm start\` or another program. ` +
        `Stop it, or set ${variable} to a free port.`,
    );
  }
  if (problem.code === 'EACCES') {
    throw new ActionableError(`cannot listen on port ${port} (${variable}): permission denied. Set ${variable} to a port above 1023.`);
  }
  throw new ActionableError(`cannot listen on ${host}:${port} (${variable}): ${problem.code ?? problem.message}. Check HOST and ${variable}.`);
}

async function postgresIds(): Promise<{ uid: number; gid: number } | null> {
  try {
    const [uid, gid] = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
    return { uid: Number(uid.stdout), gid: Number(gid.stdout) };
  } catch {
    return null; // not created yet: embedded-postgres creates it, in a group of its own
  }
}

/** The folder holding the embedded PostgreSQL programs (initdb, postgres) of this platform's package. */
async function postgresPrograms(): Promise<string | null> {
  try {
    const bin: { initdb: string } = await import(`@embedded-postgres/${process.platform}-${process.arch}`);
    return path.dirname(bin.initdb);
  } catch {
    return null; // no package for this platform: embedded-postgres reports that itself
  }
}

/**
 * Creates a start's data directory (and its `logs`) for its owner alone, except that the embedded
 * PostgreSQL's user must pass through it when this runs as root (PostgreSQL then runs as the user
 * "postgres", see assertEmbeddedUserCanEnter): 0711 then, enter but not list. `logs` stays 0700.
 * Modes apply to folders it creates; an existing folder keeps its own.
 */
export async function makeDataDir(dataDir: string): Promise<string> {
  await mkdir(dataDir, { recursive: true, mode: process.getuid?.() === 0 ? 0o711 : 0o700 });
  const logs = path.join(dataDir, 'logs');
  await mkdir(logs, { recursive: true, mode: 0o700 });
  return logs;
}

/**
 * As root, the embedded PostgreSQL runs as the system user `postgres` (PostgreSQL refuses to run as
 * root), which must be able to enter every folder above its programs (inside this checkout's
 * node_modules) and above its data directory. A clone inside root's home (mode 0700) is the usual
 * trap: initdb then fails with a bare "spawn … initdb EACCES".
 */
export async function assertEmbeddedUserCanEnter(dataDir: string): Promise<void> {
  if (process.getuid?.() !== 0) return;
  const ids = await postgresIds();
  const programs = await postgresPrograms();
  const needs: [string, string][] = [[path.resolve(dataDir), `its data directory (DATA_DIR=${dataDir})`]];
  if (programs) needs.push([programs, `its programs in this checkout (${programs})`]);
  for (const [start, what] of needs) {
    for (let dir = start; ; dir = path.dirname(dir)) {
      const st = await stat(dir).catch(() => null);
      const enters = !st || (ids && st.uid === ids.uid && st.mode & 0o100) || (ids && st.gid === ids.gid && st.mode & 0o010) || st.mode & 0o001;
      if (!enters) {
        const mode = (st!.mode & 0o777).toString(8).padStart(4, '0');
        const elsewhere = what.startsWith('its data') ? 'set DATA_DIR to a folder it can reach (for example DATA_DIR=/var/lib/cairn)' : 'clone the project outside that folder (for example under /opt or /srv)';
        throw new ActionableError(
          `the embedded PostgreSQL runs as the system user "postgres" (PostgreSQL refuses to run as root), and that user cannot enter ${dir} ` +
            `(mode ${mode}), which holds ${what}. Let it through with \`chmod o+x ${dir}\`, or ${elsewhere}, ` +
            'or use an existing PostgreSQL with DATABASE_URL.',
        );
      }
      if (dir === path.dirname(dir)) break;
    }
  }
}

/** The address of a database URL without its password, for messages. */
function where(url: string): string {
  try {
    const u = new URL(url);
    return `${u.hostname}:${u.port || 5432}${u.pathname}`;
  } catch {
    return 'DATABASE_URL';
  }
}

const DATABASE_HINTS: Record<string, string> = {
  ECONNREFUSED: 'nothing accepts connections there: start PostgreSQL, or correct the host and port',
  ENOTFOUND: 'the host name does not resolve: correct the host',
  EAI_AGAIN: 'the host name could not be resolved now: check DNS and the host',
  ETIMEDOUT: 'no answer: check the host, the port and any firewall',
  '28P01': 'the user name or password is wrong',
  '28000': 'the server refuses this user from this address (pg_hba.conf)',
  '3D000': 'the database does not exist: create it (createdb) or name an existing one',
};

/** DATABASE_URL must answer before anything is started on it. */
export async function assertDatabaseReachable(url: string): Promise<void> {
  try {
    await probeDatabase(url, 5000);
  } catch (err) {
    const code = (err as { code?: string }).code ?? '';
    const hint = DATABASE_HINTS[code] ?? (err as Error).message;
    throw new ActionableError(`cannot reach the database at ${where(url)} (DATABASE_URL): ${code ? `${code}, ` : ''}${hint}.`, { cause: err });
  }
}

/** TEMPORAL_ADDRESS must answer before a worker and an API are started against it. */
export async function assertTemporalReachable(address: string): Promise<void> {
  const { Connection } = await import('@temporalio/client');
  try {
    const connection = await Connection.connect({ address, connectTimeout: '5s' });
    await connection.close();
  } catch (err) {
    throw new ActionableError(
      `cannot reach Temporal at ${address} (TEMPORAL_ADDRESS): ${(err as Error).message}. Start the Temporal server there, correct ` +
        'TEMPORAL_ADDRESS, or unset it to run the local dev server.',
      { cause: err },
    );
  }
}
