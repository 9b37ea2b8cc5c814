// A closed-loop load generator in a worker thread for requests whose bodies must differ (idempotency
// keys, message text): `connections` clients each send the next request when the previous one is
// answered, for a fixed duration and a hard request ceiling. The n-th request sent is
// requests[n % length] (one request, or different URLs and bodies such as one session per peer);
// `{{uuid}}` in a body becomes a fresh UUID per request. Answers one ClosedLoopSample message.
import { randomUUID } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { Agent } from 'undici';

export type ClosedLoopOptions = {
  /** POSTed in turn. */
  requests: { url: string; body: string }[];
  headers: Record<string, string>;
  connections: number;
  durationSeconds: number;
  maxRequests: number;
  /** A 2xx answer whose body contains this is an error too (MCP tool errors arrive with 200). */
  errorMarker?: string;
  /** Unmeasured requests first; then the worker posts `{ warmed: true }` and waits for `go`. */
  warmupRequests?: number;
};

/** `warmedUp`: requests sent before the measured ones (they used requests[0..warmedUp-1]). */
export type ClosedLoopSample = { latenciesMs: number[]; durationSeconds: number; errors: number; firstError?: string; warmedUp: number };

const opts = workerData as ClosedLoopOptions;
const dispatcher = new Agent({ connections: opts.connections, keepAliveTimeout: 30_000 });
const latenciesMs: number[] = [];
let errors = 0;
let firstError: string | undefined;
let sent = 0;

async function client(deadline: number) {
  while (Date.now() < deadline && sent < opts.maxRequests) {
    const request = opts.requests[sent % opts.requests.length]!;
    sent++;
    const started = performance.now();
    try {
      // undici's request() rather than fetch(): the same HTTP/1.1 keep-alive exchange at a fraction of
      // the client CPU, which shares the machine with the service being measured.
      const url = new URL(request.url);
      const res = await dispatcher.request({
        origin: url.origin,
        path: url.pathname + url.search,
        method: 'POST',
        headers: opts.headers,
        body: request.body.replaceAll('{{uuid}}', randomUUID()),
        headersTimeout: 30_000,
        bodyTimeout: 30_000,
      });
      const text = await res.body.text();
      const ok = res.statusCode >= 200 && res.statusCode < 300 && !(opts.errorMarker && text.includes(opts.errorMarker));
      if (ok) latenciesMs.push(performance.now() - started);
      else {
        errors++;
        firstError ??= `${res.statusCode} ${text.slice(0, 300)}`;
      }
    } catch (err) {
      errors++;
      firstError ??= String(err);
    }
  }
}

const warmup = opts.warmupRequests ?? 0;
if (warmup > 0) {
  const limit = opts.maxRequests;
  opts.maxRequests = warmup;
  await Promise.all(Array.from({ length: opts.connections }, () => client(Date.now() + 600_000)));
  if (errors) throw new Error(`${errors} warm-up requests failed, first: ${firstError}`);
  latenciesMs.length = 0;
  opts.maxRequests = warmup + limit;
  parentPort!.postMessage({ warmed: true });
  await new Promise((resolve) => parentPort!.once('message', resolve));
}
const started = performance.now();
const deadline = Date.now() + opts.durationSeconds * 1000;
await Promise.all(Array.from({ length: opts.connections }, () => client(deadline)));
const sample: ClosedLoopSample = {
  latenciesMs, durationSeconds: (performance.now() - started) / 1000, errors, warmedUp: Math.min(warmup, sent), ...(firstError ? { firstError } : {}),
};
parentPort!.postMessage({ sample });
await dispatcher.close();
