import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Json } from './accounts.ts';

// The real `cairn` binary as a child process (through this Node 24), with its own config directory,
// so each test sees only the settings it wrote.

export const CAIRN = path.resolve(import.meta.dirname, '../../cli/cairn.ts');

export type CairnResult = { code: number | null; stdout: string; stderr: string; json: Json };

export type CairnHome = { dir: string; configFile: string; env: Record<string, string>; remove(): Promise<void> };

/** A throwaway HOME and XDG_CONFIG_HOME. */
export async function cairnHome(): Promise<CairnHome> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cairn-cli-'));
  const config = path.join(dir, 'config');
  return {
    dir,
    configFile: path.join(config, 'cairn', 'config.json'),
    env: { HOME: dir, XDG_CONFIG_HOME: config },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

/** Starts `cairn ...` with only PATH and the given variables in its environment. */
export function spawnCairn(args: string[], env: Record<string, string>): ChildProcess & { output: { stdout: string; stderr: string } } {
  const child = spawn(process.execPath, [CAIRN, ...args], { env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['pipe', 'pipe', 'pipe'] });
  const output = { stdout: '', stderr: '' };
  child.stdout!.on('data', (d) => (output.stdout += d));
  child.stderr!.on('data', (d) => (output.stderr += d));
  return Object.assign(child, { output });
}

/** Waits for a child to exit; stdout parsed as JSON when it is JSON (else null). */
export function finished(child: ReturnType<typeof spawnCairn>): Promise<CairnResult> {
  return new Promise((resolve) => {
    child.on('close', (code) => {
      let json: Json;
      try {
        json = JSON.parse(child.output.stdout);
      } catch {
        json = null;
      }
      resolve({ code, ...child.output, json });
    });
  });
}

/** Runs `cairn ...` to completion. */
export function runCairn(args: string[], env: Record<string, string>): Promise<CairnResult> {
  const child = spawnCairn(args, env);
  child.stdin!.end();
  return finished(child);
}

/** Resolves with the first match of `re` in what the child has written to stderr so far or later. */
export function stderrMatch(child: ReturnType<typeof spawnCairn>, re: RegExp, timeoutMs = 20_000): Promise<RegExpMatchArray> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no ${re} on stderr; got: ${child.output.stderr}`)), timeoutMs);
    const check = () => {
      const m = child.output.stderr.match(re);
      if (!m) return;
      clearTimeout(timer);
      child.stderr!.off('data', check);
      resolve(m);
    };
    child.stderr!.on('data', check);
    check();
  });
}
