import { Worker } from 'node:worker_threads';
import { measureQuietly, type QuietOptions } from './machine.ts';
import { median, round, summarize } from './stats.ts';

export type LoadOptions = {
  /** Only loopback targets: benchmarks never send traffic anywhere else. */
  url: string;
  method?: 'GET' | 'POST';
  headers?: Record<string, string>;
  body?: string;
  connections: number;
  durationSeconds: number;
  /** Upper bound on requests in one run, whatever the duration. */
  maxRequests: number;
};

/** What one run measured: every 2xx latency and the run's counters. */
export type LoadSample = {
  latenciesMs: number[];
  durationSeconds: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statusCounts: Record<string, number>;
};

export type LoadRun = {
  requests: number;
  requestsPerSecond: number;
  meanMs: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  /** Share of the machine's CPU used by other processes during the run (Linux only). */
  otherCpuPercent?: number;
};

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

export function assertLoopback(url: string): void {
  const host = new URL(url).hostname;
  if (!LOOPBACK.has(host)) throw new Error(`Benchmarks only send traffic to this machine, not to ${host}.`);
}

/**
 * One bounded autocannon run in a worker thread (keep-alive connections, fixed concurrency). Any non-2xx
 * answer or connection error fails the run: a benchmark of failing requests measures nothing useful.
 */
export async function runLoad(opts: LoadOptions): Promise<LoadRun> {
  assertLoopback(opts.url);
  const worker = new Worker(new URL('./load-worker.ts', import.meta.url), { workerData: opts });
  // Belt and braces: the worker ends by itself after the duration; this ends it if it does not.
  const deadlineMs = (opts.durationSeconds + 30) * 1000;
  const sample = await new Promise<LoadSample>((resolve, reject) => {
    const timer = setTimeout(() => {
      void worker.terminate();
      reject(new Error(`load run against ${opts.url} did not finish within ${deadlineMs} ms`));
    }, deadlineMs);
    worker.once('message', (m: { sample?: LoadSample; error?: string }) => {
      clearTimeout(timer);
      if (m.sample) resolve(m.sample);
      else reject(new Error(`load generator failed: ${m.error}`));
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  });
  await worker.terminate();

  if (sample.non2xx > 0 || sample.errors > 0 || sample.ok === 0) {
    throw new Error(
      `load run against ${opts.method ?? 'GET'} ${opts.url} had failures: ` +
        `${sample.ok} ok, statuses ${JSON.stringify(sample.statusCounts)}, ${sample.errors} errors, ${sample.timeouts} timeouts`,
    );
  }
  const s = summarize(sample.latenciesMs);
  return {
    requests: sample.ok,
    requestsPerSecond: sample.ok / sample.durationSeconds,
    meanMs: s.mean,
    p50Ms: s.p50,
    p95Ms: s.p95,
    p99Ms: s.p99,
  };
}

/** `runLoad` on a machine that may be shared: repeated (bounded) while other processes were busy. */
export async function runLoadQuietly(opts: LoadOptions, quiet: QuietOptions): Promise<LoadRun> {
  const { value, otherCpuPercent } = await measureQuietly(() => runLoad(opts), quiet);
  return { ...value, ...(otherCpuPercent === undefined ? {} : { otherCpuPercent }) };
}

/** Medians across repeated runs, field by field (rounded for the record). */
export function medianOfRuns(runs: LoadRun[]): LoadRun {
  const pick = (f: Exclude<keyof LoadRun, 'otherCpuPercent'>) => round(median(runs.map((r) => r[f])));
  return {
    requests: pick('requests'),
    requestsPerSecond: pick('requestsPerSecond'),
    meanMs: pick('meanMs'),
    p50Ms: pick('p50Ms'),
    p95Ms: pick('p95Ms'),
    p99Ms: pick('p99Ms'),
  };
}

export function roundRun(run: LoadRun): LoadRun {
  return {
    ...(run.otherCpuPercent === undefined ? {} : { otherCpuPercent: run.otherCpuPercent }),
    requests: run.requests,
    requestsPerSecond: round(run.requestsPerSecond),
    meanMs: round(run.meanMs),
    p50Ms: round(run.p50Ms),
    p95Ms: round(run.p95Ms),
    p99Ms: round(run.p99Ms),
  };
}
