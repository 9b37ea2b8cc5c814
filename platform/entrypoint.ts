import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { ConfigError } from './config.ts';

/**
 * A failure a person can act on (a port in use, a data directory held by another run, a database
 * that does not answer, a folder the database's user cannot enter): the message says what failed and
 * what to do, and is printed without a stack, which would only bury it.
 */
export class ActionableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ActionableError';
  }
}

/** The text for a person: an actionable error's message; anything else with its stack (a bug). */
export function describeFailure(err: unknown): string {
  if (err instanceof ActionableError || err instanceof ConfigError) return err.message;
  if (err instanceof Error) return err.stack ?? err.message;
  return `an unexpected failure without details (${String(err)})`;
}

/**
 * Runs an entrypoint: configuration errors print a message naming the variable and exit 78; an
 * actionable error prints its message and exits 1; anything else prints the error with its stack and
 * exits 1.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    process.stderr.write(`${describeFailure(err)}\n`);
    process.exit(err instanceof ConfigError ? 78 : 1);
  });
}

/**
 * Calls `stop` once on SIGINT or SIGTERM; a second signal, or `stop` outliving `timeoutMs`, exits hard
 * so a stuck dependency never leaves the process hanging.
 */
export function onShutdown(stop: (signal: string) => Promise<void>, timeoutMs: number): void {
  let stopping = false;
  const handler = (signal: NodeJS.Signals) => {
    if (stopping) process.exit(130);
    stopping = true;
    const timer = setTimeout(() => {
      process.stderr.write(`shutdown did not finish within ${timeoutMs} ms; exiting\n`);
      process.exit(1);
    }, timeoutMs);
    timer.unref();
    stop(signal).then(
      () => process.exit(0),
      (err: unknown) => {
        process.stderr.write(`shutdown failed: ${String(err)}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
}

/**
 * Under the local supervisor (`npm start`), a child exits when the supervisor disappears, even if the
 * supervisor was killed with SIGKILL and could not stop it: no orphans.
 */
export function exitWithSupervisor(): void {
  const supervisor = Number(process.env.CAIRN_SUPERVISOR_PID);
  if (!supervisor) return;
  const timer = setInterval(() => {
    try {
      process.kill(supervisor, 0);
    } catch {
      process.kill(process.pid, 'SIGTERM');
    }
  }, 1000);
  timer.unref();
}

/**
 * The ordered stop of a local supervisor (`npm start`, `npm run cluster`), once, on SIGINT, SIGTERM or
 * `shutdown(code)`: its child processes first (`stopChildren`: they drain), then what was pushed on
 * `stops` in reverse order (Temporal before PostgreSQL), then exit with the code.
 */
export function supervisorShutdown(say: (message: string) => void, stopChildren: () => Promise<void>) {
  const stops: (() => Promise<void>)[] = [];
  let shuttingDown = false;
  const shutdown = async (code: number) => {
    if (shuttingDown) return;
    shuttingDown = true;
    say('stopping...');
    await stopChildren();
    for (const stop of stops.reverse()) await stop().catch((err: unknown) => say(`stop failed: ${String(err)}`));
    say('stopped');
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  return { stops, shutdown, shuttingDown: () => shuttingDown };
}

/** Polls `check` every 250 ms until it holds; throws once `timeoutMs` passed; returns early when `cancelled`. */
export async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string, cancelled: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cancelled()) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`${what} did not become ready within ${timeoutMs / 1000}s`);
    await sleep(250);
  }
}

/** Whether `url` answers 2xx within 2 s (false while nothing listens). */
export const answersOk = (url: string): Promise<boolean> =>
  fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);

/** Stops a child process: SIGTERM, then SIGKILL once `timeoutMs` passed; resolves when it has exited. */
export async function stopChild(child: ChildProcess, timeoutMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  await exited;
  clearTimeout(timer);
}

/** Resolves when the worker sends 'ready' (bin/worker.ts), or when it exits (the caller handles that). */
export function workerReady(worker: ChildProcess, timeoutMs: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the worker did not report ready within ${timeoutMs / 1000}s`)), timeoutMs);
    const done = () => {
      clearTimeout(timer);
      resolve();
    };
    worker.on('message', (m) => m === 'ready' && done());
    worker.once('exit', done);
  });
}
