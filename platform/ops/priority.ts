import { readdirSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';

// The worker (background work) runs at a lower CPU priority than request handling when they share a
// host (BACKGROUND_NICE): a burst of claim derivation or ingest otherwise takes the cores from the
// API's receipts. The nice value only matters under contention; an idle machine gives background work
// all it asks for. The database and Temporal are the operator's to prioritise.

/**
 * Lowers one task (a process or a single thread id) to `nice`, never raising it. Best effort: false
 * when the task is gone or may not be changed.
 */
export function lowerTaskPriority(id: number, nice: number): boolean {
  try {
    if (getPriority(id) >= nice) return true;
    setPriority(id, nice);
    return true;
  } catch {
    return false;
  }
}

/**
 * Lowers every thread of a process to `nice`. On Linux a nice value belongs to a thread, and a
 * thread started later inherits its creator's, so once all of them are lowered the process stays
 * so. Returns how many threads were lowered (0 where /proc is absent or the process is gone).
 */
export function lowerProcessPriority(pid: number, nice: number): number {
  let tasks: string[];
  try {
    tasks = readdirSync(`/proc/${pid}/task`);
  } catch {
    return 0;
  }
  return tasks.filter((tid) => lowerTaskPriority(Number(tid), nice)).length;
}

/** This process (first thing at start-up: the SDK's, libuv's and V8's threads then all run at it). */
export function lowerOwnPriority(nice: number): number {
  return lowerProcessPriority(process.pid, nice) || (lowerTaskPriority(0, nice) ? 1 : 0);
}
