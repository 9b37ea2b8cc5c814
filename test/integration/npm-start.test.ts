import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../shared/local/ephemeral.ts';
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

function start(): { child: ChildProcess; output: () => string; ready: Promise<void> } {
  let out = '';
  const child = spawn(process.execPath, [path.resolve('bin/start.ts')], { env, stdio: ['ignore', 'pipe', 'pipe'] });
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

/** The nice values of the backends serving each Cairn process (by application_name), as one set each. */
async function backendNices(): Promise<Record<string, Set<number>>> {
  const rows = await query<{ pid: number; application_name: string }>(
    "select pid, application_name from pg_stat_activity where application_name like 'cairn-%'",
  );
  const out: Record<string, Set<number>> = {};
  for (const r of rows) for (const nice of threadNices(r.pid)) (out[r.application_name] ??= new Set()).add(nice);
  return out;
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
    // of the worker and of the Temporal dev server, and the database backends serving the worker (the
    // self-check ran through it); the API and its backends stay at 0.
    const children = childrenOf(first.child.pid!);
    const proc = (pattern: string) => children.find((c) => c.args.includes(pattern))!.pid;
    expect(new Set(threadNices(proc('bin/worker.ts')))).toEqual(new Set([10]));
    expect(new Set(threadNices(proc(`--port ${ports.TEMPORAL_DEV_PORT}`)))).toEqual(new Set([10]));
    expect(new Set(threadNices(proc('bin/api.ts')))).toEqual(new Set([0]));
    // The API's pool closes connections idle for 10 s, which the self-check can outlast on a loaded
    // machine: a readiness probe (a query through that pool) gives the API a backend to look at.
    expect((await fetch(`${base}/readyz`)).status).toBe(200);
    expect(await backendNices()).toEqual({ 'cairn-worker': new Set([10]), 'cairn-api': new Set([0]) });

    expect(await stop(first.child)).toBe(0);
    await sleep(1500); // the watchdog interval of supervised children
    expect(leftovers()).toEqual([]);

    const second = start();
    await second.ready;
    expect(second.output()).toContain('database schema is up to date');
    expect(await countSelfChecks()).toBe(1);
    expect(await stop(second.child)).toBe(0);
    await sleep(1500);
    expect(leftovers()).toEqual([]);
  });
});
