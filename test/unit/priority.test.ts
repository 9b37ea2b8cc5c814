import { spawn, type ChildProcess } from 'node:child_process';
import { getPriority } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { threadNices } from '../helpers/processes.ts';
import { lowerProcessPriority, lowerTaskPriority } from '../../platform/ops/priority.ts';

let child: ChildProcess | undefined;
afterEach(() => {
  child?.kill('SIGKILL');
  child = undefined;
});

/** A process with several threads (Node's own: V8 platform and libuv), idle until killed. */
async function threaded(): Promise<number> {
  child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000); console.log("up")'], { stdio: ['ignore', 'pipe', 'ignore'] });
  await new Promise((resolve) => child!.stdout!.once('data', resolve));
  return child.pid!;
}

describe('background priority', () => {
  it('lowers every thread of a process, and never raises a lower one', async () => {
    const pid = await threaded();
    expect(threadNices(pid).length).toBeGreaterThan(1);
    expect(lowerProcessPriority(pid, 6)).toBe(threadNices(pid).length);
    expect(new Set(threadNices(pid))).toEqual(new Set([6]));
    expect(lowerTaskPriority(pid, 3)).toBe(true);
    expect(getPriority(pid)).toBe(6);
  });
});
