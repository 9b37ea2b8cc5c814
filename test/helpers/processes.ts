import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { inject } from 'vitest';
import { freePort } from './ephemeral.ts';

// Production entrypoints in their own processes, so fault tests can SIGKILL them.

type Env = Record<string, string | undefined>;

/** `detached`: leader of its own process group (for signals to the group); `output`: its stdout and stderr. */
type SpawnOptions = { detached?: boolean; output?: (chunk: string) => void };

function spawnEntrypoint(script: string, env: Env, opts: SpawnOptions = {}): ChildProcess {
  const child = spawn(process.execPath, [path.resolve(script)], {
    env: { PATH: process.env.PATH, LOG_LEVEL: 'warn', WORKER_METRICS_PORT: '0', ...env },
    stdio: ['ignore', opts.output ? 'pipe' : 'ignore', opts.output ? 'pipe' : 'inherit'],
    detached: opts.detached ?? false,
  });
  child.stdout?.on('data', (c) => opts.output?.(String(c)));
  child.stderr?.on('data', (c) => opts.output?.(String(c)));
  return child;
}

/** bin/worker.ts on a task queue (Temporal address: the test run's server unless given). */
export function spawnWorker(databaseUrl: string, taskQueue: string, env: Env = {}): ChildProcess {
  return spawnEntrypoint('bin/worker.ts', {
    DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: taskQueue, ...env,
  });
}

/** bin/api.ts on a port; resolves once /readyz answers 200. */
export async function spawnApi(databaseUrl: string, taskQueue: string, port: number, env: Env = {}, opts: SpawnOptions = {}): Promise<ChildProcess> {
  const child = spawnEntrypoint('bin/api.ts', {
    DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_TASK_QUEUE: taskQueue,
    PORT: String(port), MCP_PORT: String(await freePort()), MIGRATE_ON_START: 'false', ...env,
  }, opts);
  // Generous: a loaded machine (load 10+) starts a process in tens of seconds.
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`api exited with ${child.exitCode}`);
    const ok = await fetch(`http://127.0.0.1:${port}/readyz`).then((r) => r.ok, () => false);
    if (ok) return child;
    if (Date.now() > deadline) throw new Error('api did not become ready');
    await sleep(100);
  }
}

/** SIGKILL and wait for the process to be gone. */
export async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await gone;
}

/** The nice value of each thread of a process (ps -L). */
export function threadNices(pid: number): number[] {
  const out = spawnSync('ps', ['-L', '-o', 'ni=', '-p', String(pid)], { encoding: 'utf8' }).stdout;
  return out.split('\n').map((l) => l.trim()).filter(Boolean).map(Number);
}

/** The extraction processes (tinypool children) of process `parent` that are running (not zombies), from /proc. */
export async function extractionProcessesOf(parent: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    const cmd = await readFile(`/proc/${entry}/cmdline`, 'utf8').catch(() => '');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[1]) === parent && fields[0] !== 'Z' && cmd.includes('tinypool')) pids.push(Number(entry));
  }
  return pids;
}
