import type { ClosedLoopOptions, ClosedLoopSample } from './closed-loop-worker.ts';
import { assertLoopback } from './load.ts';
import { sampleFromWorker } from './worker-sample.ts';

export type { ClosedLoopOptions, ClosedLoopSample };

/**
 * Closed-loop load from a worker thread, so the generator never shares the event loop of an in-process
 * API it measures. Only loopback targets.
 */
export function closedLoop(opts: ClosedLoopOptions & { warmup?: Warmup }): Promise<ClosedLoopSample> {
  for (const r of opts.requests) assertLoopback(r.url);
  const script = new URL('./closed-loop-worker.ts', import.meta.url);
  const { warmup, ...workerOpts } = opts;
  return sampleFromWorker<ClosedLoopSample>(
    script, { ...workerOpts, warmupRequests: warmup?.requests ?? 0 }, (opts.durationSeconds + 60) * 1000 + (warmup ? 600_000 : 0),
    `load against ${opts.requests[0]!.url}`, warmup?.then,
  );
}

/**
 * Unmeasured requests sent first by the same generator (its connections open, its code compiled: a
 * fresh worker thread compiles the HTTP client while it runs, on the machine being measured), then
 * `then` (draining, CPU snapshots) before the measured requests start.
 */
export type Warmup = { requests: number; then?: () => Promise<void> };
