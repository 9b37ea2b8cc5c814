import { spawn, type ChildProcess } from 'node:child_process';
import { openSync } from 'node:fs';
import { stopChild } from '../../platform/entrypoint.ts';

export type Supervised = {
  name: string;
  /** The running process, if any (undefined between a crash and its restart). */
  readonly child: ChildProcess | undefined;
  /** How many times it was started (1 + restarts). */
  readonly starts: number;
  /** Stops it for good: SIGTERM, then SIGKILL after `timeoutMs`. */
  stop(timeoutMs: number): Promise<void>;
};

/** A restart waits this long, doubled while the process keeps dying within RESTART_WINDOW_MS, up to the max. */
const RESTART_DELAY_MS = 500;
const RESTART_MAX_DELAY_MS = 10_000;
const RESTART_WINDOW_MS = 10_000;

/**
 * Runs a process and starts it again whenever it exits without being asked to (a crash, a SIGKILL, an
 * out-of-memory kill): what `restart: unless-stopped` does in docker-compose.yml. Its output goes to
 * ours, or appended to `logFile`.
 */
export function supervise(opts: {
  name: string;
  command: string;
  args: string[];
  env: NodeJS.ProcessEnv;
  cwd?: string;
  logFile?: string;
  log: (message: string) => void;
  /** Messages the process sends over an IPC channel (bin/worker.ts sends 'ready' once it polls). */
  onMessage?: (message: unknown) => void;
}): Supervised {
  let child: ChildProcess | undefined;
  let starts = 0;
  let stopping = false;
  let delay = RESTART_DELAY_MS;
  let timer: NodeJS.Timeout | undefined;

  const start = () => {
    const out = opts.logFile ? openSync(opts.logFile, 'a') : 'inherit';
    const startedAt = Date.now();
    const current = spawn(opts.command, opts.args, {
      env: opts.env, cwd: opts.cwd, stdio: opts.onMessage ? ['ignore', out, out, 'ipc'] : ['ignore', out, out],
    });
    if (opts.onMessage) current.on('message', opts.onMessage);
    child = current;
    starts++;
    opts.log(`${opts.name} started (pid ${current.pid})`);
    current.on('exit', (code, signal) => {
      child = undefined;
      if (stopping) return;
      delay = Date.now() - startedAt < RESTART_WINDOW_MS ? Math.min(delay * 2, RESTART_MAX_DELAY_MS) : RESTART_DELAY_MS;
      opts.log(`${opts.name} exited (${signal ?? `code ${code}`}); restarting in ${delay} ms`);
      timer = setTimeout(start, delay);
    });
  };
  start();

  return {
    name: opts.name,
    get child() {
      return child;
    },
    get starts() {
      return starts;
    },
    async stop(timeoutMs) {
      stopping = true;
      clearTimeout(timer);
      if (child) await stopChild(child, timeoutMs);
    },
  };
}
