import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import type { Infra } from './infra.ts';

/**
 * bin/worker.ts as its own process (as in production), stopped with the benchmark's infrastructure. It
 * sends 'ready' on its IPC channel once it polls (workerReady in platform/entrypoint.ts).
 */
export function spawnBenchWorker(
  infra: Infra,
  env: { databaseUrl: string; temporalAddress: string; taskQueue: string; extra?: Record<string, string> },
): ChildProcess {
  const child = spawn(process.execPath, [path.resolve('bin/worker.ts')], {
    env: {
      PATH: process.env.PATH,
      DATABASE_URL: env.databaseUrl,
      TEMPORAL_ADDRESS: env.temporalAddress,
      TEMPORAL_TASK_QUEUE: env.taskQueue,
      LOG_LEVEL: 'warn',
      WORKER_METRICS_PORT: '0',
      ...(process.env.BACKGROUND_NICE ? { BACKGROUND_NICE: process.env.BACKGROUND_NICE } : {}),
      // For an A/B of the per-account share of ingest slots (a size nothing reaches turns it off).
      ...(process.env.INGEST_LARGE_BYTES ? { INGEST_LARGE_BYTES: process.env.INGEST_LARGE_BYTES } : {}),
      ...env.extra,
    },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  // Wait for it to finish its shutdown before the Temporal server and the database stop under it.
  infra.onStop(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    await exited;
    clearTimeout(timer);
  });
  return child;
}
