// The mixed workload's load generator, in a worker thread so it does not share the API's event loop.
// Closed loop: `connections` virtual clients, each sending its next request as soon as the previous
// one is answered, for a fixed duration and a hard request ceiling. Answers one MixedSample message.
import { randomUUID } from 'node:crypto';
import { parentPort, workerData } from 'node:worker_threads';
import { Agent } from 'undici';

export type MixedOp = 'query:evidence' | 'query:context' | 'query:answer' | 'memory:write' | 'ingest:file';

export type MixedOptions = {
  baseUrl: string;
  apiKey: string;
  connections: number;
  durationSeconds: number;
  maxRequests: number;
  /** Relative weights of the operations. */
  weights: Record<MixedOp, number>;
  questions: string[];
  /** Existing peer and session labels for message writes. */
  peers: string[];
  sessions: string[];
};

export type MixedSample = {
  durationSeconds: number;
  latenciesMs: Record<MixedOp, number[]>;
  errors: Record<MixedOp, number>;
  statusCounts: Record<string, number>;
};

const opts = workerData as MixedOptions;
const dispatcher = new Agent({ connections: opts.connections, keepAliveTimeout: 30_000 });
const ops = Object.keys(opts.weights) as MixedOp[];
const total = ops.reduce((n, o) => n + opts.weights[o], 0);

// Deterministic choice sequence (no Math.random) so two runs send the same mix.
let seed = 20261123;
const next = () => {
  seed = (seed * 1103515245 + 12345) % 2 ** 31;
  return seed / 2 ** 31;
};
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)]!;
function pickOp(): MixedOp {
  let r = next() * total;
  for (const o of ops) {
    r -= opts.weights[o];
    if (r < 0) return o;
  }
  return ops[ops.length - 1]!;
}

function request(op: MixedOp): { path: string; body: unknown } {
  if (op.startsWith('query:')) {
    return {
      path: '/v1/query',
      body: { idempotencyKey: `mixed-${randomUUID()}`, mode: op.slice(6), query: pick(opts.questions), preset: next() < 0.5 ? 'efficient' : 'accuracy' },
    };
  }
  if (op === 'memory:write') {
    const i = Math.floor(next() * opts.peers.length);
    return {
      path: `/v1/workspaces/default/sessions/${encodeURIComponent(opts.sessions[i % opts.sessions.length]!)}/messages`,
      body: {
        peer_id: opts.peers[i]!,
        messages: [{ role: 'user', content: `I moved to ${pick(['Lisbon', 'Oslo', 'Quito', 'Osaka'])} in ${2000 + Math.floor(next() * 25)} and I prefer ${pick(['tea', 'coffee', 'cocoa'])}.` }],
      },
    };
  }
  const text = `# Note ${randomUUID()}\n\nStation Vega recorded ${Math.floor(next() * 1000)} storms. The keeper was Ines Morales.\n`;
  return {
    path: '/v1/ingest/file',
    body: {
      filename: 'note.md', contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'),
      dryRun: false, datedAt: '2026-11-01', idempotencyKey: `mixed-${randomUUID()}`,
    },
  };
}

const latenciesMs = Object.fromEntries(ops.map((o) => [o, [] as number[]])) as Record<MixedOp, number[]>;
const errors = Object.fromEntries(ops.map((o) => [o, 0])) as Record<MixedOp, number>;
const statusCounts: Record<string, number> = {};
let sent = 0;

async function client(deadline: number) {
  while (Date.now() < deadline && sent < opts.maxRequests) {
    sent++;
    const op = pickOp();
    const { path, body } = request(op);
    const started = performance.now();
    try {
      const res = await fetch(`${opts.baseUrl}${path}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${opts.apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        // @ts-expect-error undici's dispatcher option is not in the DOM fetch types
        dispatcher,
        signal: AbortSignal.timeout(30_000),
      });
      await res.arrayBuffer();
      statusCounts[res.status] = (statusCounts[res.status] ?? 0) + 1;
      if (res.status >= 200 && res.status < 300) latenciesMs[op].push(performance.now() - started);
      else errors[op]++;
    } catch {
      statusCounts.error = (statusCounts.error ?? 0) + 1;
      errors[op]++;
    }
  }
}

const started = performance.now();
const deadline = Date.now() + opts.durationSeconds * 1000;
await Promise.all(Array.from({ length: opts.connections }, () => client(deadline)));
const sample: MixedSample = { durationSeconds: (performance.now() - started) / 1000, latenciesMs, errors, statusCounts };
parentPort!.postMessage({ sample });
await dispatcher.close();
