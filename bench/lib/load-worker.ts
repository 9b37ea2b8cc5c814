// Runs one autocannon load in a worker thread, so that the load generator does not share the event loop
// of the API it measures. Started by load.ts; answers with one LoadSample message.
import { parentPort, workerData } from 'node:worker_threads';
import autocannon from 'autocannon';
import type { LoadOptions, LoadSample } from './load.ts';

const opts = workerData as LoadOptions;

// autocannon's own latency histogram has 1 ms resolution; the response event carries the exact time,
// so every 2xx latency is kept (a few tens of thousands of numbers per run at most).
const latencies: number[] = [];
const statusCounts: Record<string, number> = {};

const instance = autocannon(
  {
    url: opts.url,
    method: opts.method ?? 'GET',
    headers: opts.headers,
    body: opts.body,
    connections: opts.connections,
    duration: opts.durationSeconds,
    // A hard ceiling besides the duration: the loop always stops by itself.
    maxOverallRequests: opts.maxRequests,
    timeout: 10,
  },
  (err: unknown, result: autocannon.Result) => {
    if (err) {
      parentPort!.postMessage({ error: String(err) });
      return;
    }
    const sample: LoadSample = {
      latenciesMs: latencies,
      durationSeconds: result.duration,
      ok: latencies.length,
      non2xx: result.non2xx,
      errors: result.errors,
      timeouts: result.timeouts,
      statusCounts,
    };
    parentPort!.postMessage({ sample });
  },
);

instance.on('response', (_client, statusCode, _bytes, responseTime) => {
  statusCounts[statusCode] = (statusCounts[statusCode] ?? 0) + 1;
  if (statusCode >= 200 && statusCode < 300) latencies.push(responseTime);
});
