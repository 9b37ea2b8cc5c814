import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/ephemeral.ts';
import { threadNices } from '../helpers/processes.ts';

/**
 * The newcomer's path: `npm start` with nothing configured brings up embedded PostgreSQL, the Temporal
 * dev server with its UI, the worker and the API; Ctrl-C stops all of it; a second start keeps the data.
 */
let dataDir: string;
let env: NodeJS.ProcessEnv;
let ports: Record<string, number>;
/** Every supervisor the test started, so afterAll can stop one a failed assertion left running. */
const started: ChildProcess[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'cairn-start-'));
  await chmod(dataDir, 0o755);
  ports = {
    PORT: await freePort(),
    MCP_PORT: await freePort(),
    EMBEDDED_POSTGRES_PORT: await freePort(),
    TEMPORAL_DEV_PORT: await freePort(),
    TEMPORAL_UI_PORT: await freePort(),
  };
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_CLI: process.env.TEMPORAL_CLI,
    DATA_DIR: dataDir,
    LOG_LEVEL: 'warn',
    ...Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])),
  };
});
afterAll(async () => {
  // A failed assertion leaves its supervisor running: stop it (and with it everything it started).
  for (const child of started) if (child.exitCode === null && child.signalCode === null) await stop(child);
  await rm(dataDir, { recursive: true, force: true });
});

function start(extra: NodeJS.ProcessEnv = {}, detached = false): { child: ChildProcess; output: () => string; ready: Promise<void> } {
  let out = '';
  const child = spawn(process.execPath, [path.resolve('bin/start.ts')], { env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'], detached });
  started.push(child);
  child.stdout!.on('data', (c) => (out += String(c)));
  child.stderr!.on('data', (c) => (out += String(c)));
  const ready = new Promise<void>((resolve, reject) => {
    const timer = setInterval(() => {
      if (out.includes('press Ctrl-C to stop')) {
        clearInterval(timer);
        resolve();
      }
    }, 100);
    child.once('exit', (code) => {
      clearInterval(timer);
      reject(new Error(`npm start exited early (${code}):\n${out}`));
    });
  });
  return { child, output: () => out, ready };
}

/** A start that must fail: its exit code and everything it printed, which must hold no stack trace. */
async function failedStart(extra: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string }> {
  const s = start(extra);
  const code = await new Promise<number | null>((resolve) => s.child.once('exit', (c) => resolve(c)));
  s.ready.catch(() => {});
  expect(code, s.output()).toBe(1);
  expect(s.output()).not.toMatch(/\n\s+at |undefined/);
  return { code, output: s.output() };
}

async function stop(child: ChildProcess): Promise<number | null> {
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  child.kill('SIGINT');
  return exited;
}

/** Every process still running whose command line mentions this test's data directory or ports. */
function leftovers(): string[] {
  const ps = spawnSync('ps', ['-eo', 'pid,args'], { encoding: 'utf8' }).stdout.split('\n');
  return ps.filter(
    (line) =>
      line.includes(dataDir) ||
      line.includes(`--port ${ports.TEMPORAL_DEV_PORT}`) ||
      (line.includes('bin/api.ts') && line.includes(dataDir)),
  );
}

/**
 * The leftovers once the processes a stopped supervisor waited for have left the process table: none,
 * at once, on an idle machine; the ps listing is retried for up to 10 s before it is taken as the answer.
 */
async function settledLeftovers(): Promise<string[]> {
  for (const deadline = Date.now() + 10_000; leftovers().length > 0 && Date.now() < deadline;) await sleep(250);
  return leftovers();
}

async function query<T>(sql: string): Promise<T[]> {
  const client = new pg.Client({
    connectionString: `postgres://postgres:postgres@127.0.0.1:${ports.EMBEDDED_POSTGRES_PORT}/cairn`,
  });
  await client.connect();
  try {
    return (await client.query(sql)).rows as T[];
  } finally {
    await client.end();
  }
}

async function countSelfChecks(): Promise<number> {
  return Number((await query<{ count: string }>('select count(*) from self_check'))[0]!.count);
}

/** The supervisor's child processes: pid and command line. */
function childrenOf(ppid: number): { pid: number; args: string }[] {
  const ps = spawnSync('ps', ['-eo', 'pid=,ppid=,args='], { encoding: 'utf8' }).stdout.split('\n');
  return ps
    .map((line) => /^\s*(\d+)\s+(\d+)\s+(.*)$/.exec(line))
    .filter((m): m is RegExpExecArray => m !== null && Number(m[2]) === ppid)
    .map((m) => ({ pid: Number(m[1]), args: m[3]! }));
}

/** The application names of the database sessions of Cairn's processes (pg_stat_activity). */
async function sessionNames(): Promise<Set<string>> {
  const rows = await query<{ application_name: string }>("select application_name from pg_stat_activity where application_name like 'cairn-%'");
  return new Set(rows.map((r) => r.application_name));
}

describe('npm start', () => {
  it('starts everything, serves, stops cleanly and keeps data across restarts', { timeout: 240_000 }, async () => {
    const first = start();
    await first.ready;
    const base = `http://127.0.0.1:${ports.PORT}`;
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.MCP_PORT}/healthz`)).status).toBe(200);
    expect((await fetch(`http://127.0.0.1:${ports.TEMPORAL_UI_PORT}/`)).status).toBe(200);
    expect(first.output()).toContain(`Temporal UI    http://127.0.0.1:${ports.TEMPORAL_UI_PORT}`);

    // The generated password is in a file only its owner can read, never on the terminal.
    const file = path.join(dataDir, 'local-account.txt');
    expect(first.output()).toContain(`its password is in ${file} (readable only by you)`);
    expect((await stat(file)).mode & 0o777).toBe(0o600);
    const password = /password\s+(\S+)/.exec(await readFile(file, 'utf8'))![1]!;
    expect(first.output()).not.toContain(password);
    const login = await fetch(`${base}/v1/auth/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-service-csrf': '1', origin: base },
      body: JSON.stringify({ email: 'owner@cairn.local', password }),
    });
    expect(login.status).toBe(200);

    // The operator command reaches the running service's database and Temporal.
    const check = spawnSync(process.execPath, [path.resolve('cli/admin.ts'), 'selfcheck'], {
      env,
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(check.stderr).toBe('');
    expect(check.status).toBe(0);
    expect(JSON.parse(check.stdout)).toMatchObject({ ok: true, checkId: expect.stringMatching(/^selfcheck-/) });
    expect(await countSelfChecks()).toBe(1);

    // Background work yields the CPU to request handling (BACKGROUND_NICE, default 10): every thread
    // of the worker; the API stays at 0. Each names its database sessions (the self-check ran through
    // the worker's pool; the API's closes connections idle for 10 s, which the self-check can outlast
    // on a loaded machine: a readiness probe, a query through that pool, gives it one to look at).
    const children = childrenOf(first.child.pid!);
    const proc = (pattern: string) => children.find((c) => c.args.includes(pattern))!.pid;
    expect(new Set(threadNices(proc('bin/worker.ts')))).toEqual(new Set([10]));
    expect(new Set(threadNices(proc('bin/api.ts')))).toEqual(new Set([0]));
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(await sessionNames()).toEqual(new Set(['cairn-worker', 'cairn-api']));

    // A second run on the same data directory says so and what to do, and leaves the first running.
    const twice = await failedStart();
    expect(twice.output).toContain(`start failed: the data directory ${dataDir} is in use by another run: its PostgreSQL (pid `);
    expect(twice.output).toContain('Stop that `npm start` first');
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    // An operator command pointed at another port finds the data directory held, and says which port to use.
    const admin = spawnSync(process.execPath, [path.resolve('cli/admin.ts'), 'account', 'list'], {
      env: { ...env, EMBEDDED_POSTGRES_PORT: String(await freePort()) }, encoding: 'utf8', timeout: 60_000,
    });
    expect(admin.status).toBe(1);
    expect(admin.stderr).toMatch(new RegExp(`is in use by another run: its PostgreSQL \\(pid \\d+, port ${ports.EMBEDDED_POSTGRES_PORT}\\)`));
    expect(admin.stderr).not.toMatch(/\n\s+at /);

    expect(await stop(first.child)).toBe(0);
    expect(await settledLeftovers()).toEqual([]);

    // Ctrl-C in a terminal signals the whole process group: the supervisor, PostgreSQL, Temporal, the
    // API, the worker and their extraction processes at once. Before that, one of the API's extraction
    // processes dies as the OOM killer ends one: the service stays up.
    const second = start({}, true);
    await second.ready;
    expect(second.output()).toContain('database schema is up to date');
    expect(await countSelfChecks()).toBe(1);
    const apiPid = childrenOf(second.child.pid!).find((c) => c.args.includes('bin/api.ts'))!.pid;
    const extraction = childrenOf(apiPid).filter((c) => c.args.includes('tinypool'));
    expect(extraction.length).toBeGreaterThan(0);
    for (const p of extraction) process.kill(p.pid, 'SIGKILL');
    await expect.poll(() => second.output(), { timeout: 60_000, interval: 100 }).toContain('an idle extraction process ended unexpectedly');
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(second.output()).not.toContain('exited unexpectedly (');
    const from = second.output().length;
    const exited = new Promise<number | null>((resolve) => second.child.once('exit', (code) => resolve(code)));
    process.kill(-second.child.pid!, 'SIGINT');
    expect(await exited, second.output().slice(from)).toBe(0);
    expect(second.output().slice(from)).not.toMatch(/Worker exited unexpectedly|\n\s+at /);
    expect(await settledLeftovers()).toEqual([]);
  });
});

describe('npm start and operator commands that cannot run say what failed and what to do', () => {
  /** A data directory and ports of its own, so each case is independent of the run above. */
  const own = async (name: string): Promise<NodeJS.ProcessEnv> => {
    const dir = path.join(dataDir, name);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const fresh: NodeJS.ProcessEnv = { DATA_DIR: dir };
    for (const variable of Object.keys(ports)) fresh[variable] = String(await freePort());
    return fresh;
  };

  it('a port in use', async () => {
    const mine = await own('port-in-use');
    const blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(Number(mine.PORT), '127.0.0.1', resolve));
    try {
      const r = await failedStart(mine);
      expect(r.output).toContain(`start failed: port ${mine.PORT} (PORT) on 127.0.0.1 is already in use`);
      expect(r.output).toContain('set PORT to a free port');
      expect(leftovers()).toEqual([]);
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
  });

  it('a database that does not answer (npm start and admin)', async () => {
    const mine = await own('database-unreachable');
    const url = `postgres://postgres:secret-password@127.0.0.1:${await freePort()}/cairn`;
    const r = await failedStart({ ...mine, DATABASE_URL: url });
    expect(r.output).toContain(`cannot reach the database at 127.0.0.1:${new URL(url).port}/cairn (DATABASE_URL): ECONNREFUSED`);
    expect(r.output).not.toContain('secret-password');
    const admin = spawnSync(process.execPath, [path.resolve('cli/admin.ts'), 'account', 'create', '--email', 'x@example.com', '--password', 'a long enough password'], {
      env: { ...env, ...mine, DATABASE_URL: url }, encoding: 'utf8', timeout: 60_000,
    });
    expect(admin.status).toBe(1);
    expect(admin.stderr).toMatch(/^cannot reach the database at .*ECONNREFUSED, nothing accepts connections there: start PostgreSQL/);
    expect(admin.stderr).not.toMatch(/\n\s+at /);
  });

  it.runIf(process.getuid?.() === 0)('as root, a data directory inside a folder the embedded database\'s user cannot enter', async () => {
    const mine = await own('root-home');
    const locked = path.join(mine.DATA_DIR!, 'private');
    await mkdir(locked, { mode: 0o700 });
    await chmod(locked, 0o700);
    const inside = path.join(locked, 'clone', '.data');
    const r = await failedStart({ ...mine, DATA_DIR: inside });
    expect(r.output).toContain(`that user cannot enter ${locked} (mode 0700), which holds its data directory`);
    expect(r.output).toContain(`chmod o+x ${locked}`);
    expect(existsSync(inside)).toBe(false);
  });
});
