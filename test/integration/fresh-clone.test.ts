import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, cp, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { stripVTControlCharacters } from 'node:util';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { freePort } from '../helpers/ephemeral.ts';

/**
 * The README's two commands on a fresh clone: the checkout's files and nothing ignored (no node_modules),
 * with only the machine's own Node (20 here) and npm on PATH. `npm test` installs the dependencies
 * before anything runs, then type-checks, lints and runs a test; `npm start` then finds them installed
 * and starts the service.
 */
let clone: string;
let env: NodeJS.ProcessEnv;
let port: number;
const started: ChildProcess[] = [];

beforeAll(async () => {
  clone = await mkdtemp(path.join(os.tmpdir(), 'cairn-clone-'));
  await chmod(clone, 0o755);
  for (const file of execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { encoding: 'utf8' }).split('\0').filter(Boolean)) {
    if (existsSync(file)) await cp(file, path.join(clone, file), { preserveTimestamps: true });
  }
  port = await freePort();
  // The machine's PATH without this checkout's node_modules/.bin (the project's Node 24 comes with them).
  const PATH = (process.env.PATH ?? '').split(path.delimiter).filter((p) => !p.includes('node_modules')).join(path.delimiter);
  env = {
    PATH, HOME: process.env.HOME, TEMPORAL_CLI: process.env.TEMPORAL_CLI, LOG_LEVEL: 'warn',
    // The suite's database server and Temporal, so the clone's test run and start bring up neither.
    DATABASE_URL: inject('adminDatabaseUrl'), TEMPORAL_ADDRESS: inject('temporalAddress'),
    DATA_DIR: path.join(clone, '.data'), PORT: String(port), MCP_PORT: String(await freePort()), WORKER_METRICS_PORT: '0',
    TEMPORAL_TASK_QUEUE: `fresh-clone-${port}`,
  };
});
afterAll(async () => {
  for (const child of started) if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGKILL');
  await rm(clone, { recursive: true, force: true });
});

/** `npm <args>` in the clone, in its own process group (Ctrl-C reaches everything it started). */
function npm(args: string[]) {
  let output = '';
  const child = spawn('npm', args, { cwd: clone, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  started.push(child);
  // Without colours (the assertions read the text).
  const add = (c: Buffer) => (output += stripVTControlCharacters(String(c)));
  child.stdout!.on('data', add);
  child.stderr!.on('data', add);
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { child, output: () => output, exited };
}

describe('a fresh clone', () => {
  it('npm test installs the dependencies first, on the machine\'s own Node, then runs', { timeout: 900_000 }, async () => {
    expect(execFileSync('node', ['--version'], { env, encoding: 'utf8' })).toMatch(/^v20\./);
    expect(existsSync(path.join(clone, 'node_modules'))).toBe(false);
    const run = npm(['test', '--', 'test/unit/url-safety.test.ts']);
    const code = await run.exited;
    expect(code, run.output()).toBe(0);
    expect(run.output()).toContain('[cairn] installing dependencies with npm ci (node_modules is missing)');
    expect(run.output()).toMatch(/Test Files\s+1 passed/);
    expect(existsSync(path.join(clone, 'node_modules', '.bin', 'node'))).toBe(true);
  });

  it('npm start then finds them installed and starts the service', { timeout: 300_000 }, async () => {
    const run = npm(['start']);
    const deadline = Date.now() + 240_000;
    while (!run.output().includes('press Ctrl-C to stop')) {
      if (run.child.exitCode !== null || Date.now() > deadline) throw new Error(`npm start did not become ready:\n${run.output()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(run.output()).not.toContain('installing dependencies');
    expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
    // Ctrl-C: the whole process group gets SIGINT (npm itself ends by it; the supervisor stops everything).
    process.kill(-run.child.pid!, 'SIGINT');
    const stopBy = Date.now() + 60_000;
    while (!run.output().includes('[cairn] stopped')) {
      if (Date.now() > stopBy) throw new Error(`npm start did not stop:\n${run.output()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    await expect(fetch(`http://127.0.0.1:${port}/readyz`)).rejects.toThrow();
  });
});
