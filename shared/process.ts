import { ConfigError } from './config.ts';

/**
 * Runs an entrypoint: configuration errors print a message naming the variable and exit 78; anything
 * else prints the error and exits 1.
 */
export function runMain(main: () => Promise<void>): void {
  main().catch((err: unknown) => {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78);
    }
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
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
