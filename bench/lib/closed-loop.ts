import type { ClosedLoopOptions, ClosedLoopSample } from './closed-loop-worker.ts';
import { assertLoopback } from './load.ts';
import { sampleFromWorker } from './worker-sample.ts';

export type { ClosedLoopOptions, ClosedLoopSample };

/**
 * Closed-loop load from a worker thread, so the generator never shares the event loop of an in-process
 * API it measures. Only loopback targets.
 */
export function closedLoop(opts: ClosedLoopOptions): Promise<ClosedLoopSample> {
  for (const r of opts.requests) assertLoopback(r.url);
  const script = new URL('./closed-loop-worker.ts', import.meta.url);
  return sampleFromWorker<ClosedLoopSample>(script, opts, (opts.durationSeconds + 60) * 1000, `load against ${opts.requests[0]!.url}`);
}
