import { randomUUID } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import type { Config } from '../../platform/config.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { createRateLimiter } from '../../core/metering/rate-limit.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { waitForBackgroundWork } from '../lib/drain.ts';
import { assertLoopback } from '../lib/load.ts';
import type { MixedOp, MixedOptions, MixedSample } from '../lib/mixed-worker.ts';
import { lineChartSvg } from '../lib/plot.ts';
import type { Metric } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { spawnBenchWorker } from '../lib/worker-process.ts';
import { sampleFromWorker } from '../lib/worker-sample.ts';

// Issue 10 load: a mixed workload (queries in all three modes, native-memory message writes, live
// file ingests) against the real API, one worker process, Temporal and PostgreSQL, at rising
// concurrency until latency degrades. Records per level throughput, p50/p95/p99 and error rate, finds
// the knee, and draws docs/benchmarks-mixed.svg.

export const WEIGHTS: Record<MixedOp, number> = {
  'query:evidence': 35,
  'query:context': 20,
  'query:answer': 10,
  'memory:write': 25,
  'ingest:file': 10,
};

export const QUESTIONS = [
  'When was project Kestrel founded?',
  'Who was the keeper of station Vega?',
  'How many storms did station Vega record?',
  'Where does Dana live?',
  'What does Dana prefer to drink?',
  'harbour code of Kestrel',
  'Ines Morales',
  'migrating terns',
];

export type Level = {
  connections: number;
  requestsPerSecond: number;
  p50Ms: number;
  p95Ms: number;
  p99Ms: number;
  errorRate: number;
  perOpP95: Record<MixedOp, number | null>;
  statusCounts: Record<string, number>;
};

export function runLevel(opts: MixedOptions): Promise<MixedSample> {
  assertLoopback(opts.baseUrl);
  const script = new URL('../lib/mixed-worker.ts', import.meta.url);
  return sampleFromWorker<MixedSample>(script, opts, (opts.durationSeconds + 60) * 1000, `mixed load level ${opts.connections}`);
}

export function summarizeLevel(connections: number, s: MixedSample): Level {
  const all = Object.values(s.latenciesMs).flat();
  const errors = Object.values(s.errors).reduce((n, e) => n + e, 0);
  const sum = all.length ? summarize(all) : { p50: NaN, p95: NaN, p99: NaN };
  const perOpP95 = Object.fromEntries(
    Object.entries(s.latenciesMs).map(([op, l]) => [op, l.length ? round(summarize(l).p95) : null]),
  ) as Record<MixedOp, number | null>;
  return {
    connections,
    requestsPerSecond: round(all.length / s.durationSeconds),
    p50Ms: round(sum.p50),
    p95Ms: round(sum.p95),
    p99Ms: round(sum.p99),
    errorRate: round(errors / Math.max(1, errors + all.length)),
    perOpP95,
    statusCounts: s.statusCounts,
  };
}

/**
 * The knee: the last level whose throughput still rose by at least 10% over the level before, with
 * no more than 1% errors. Past it more clients only add latency.
 */
export function findKnee(levels: Level[]): Level {
  let knee = levels[0]!;
  for (let i = 1; i < levels.length; i++) {
    const l = levels[i]!;
    if (l.errorRate > 0.01 || l.requestsPerSecond < levels[i - 1]!.requestsPerSecond * 1.1) break;
    knee = l;
  }
  return knee;
}

export const mixed: Benchmark = {
  name: 'mixed',
  title: 'Mixed workload at rising concurrency: the knee, latency percentiles and error rate',
  description:
    'The real API (with the account-wide PostgreSQL rate limiter, limit raised so nothing is refused), one ' +
    'worker process, the real Temporal dev server and PostgreSQL. A corpus of Markdown files is ingested ' +
    'first, and peers and sessions are created. Then a closed-loop load generator in a worker thread ' +
    'sends a fixed mix (35% evidence queries, 20% context queries, 10% answer queries, 25% message ' +
    'writes, 10% live file ingests; each query with a new idempotency key, presets alternating) at ' +
    '1, 2, 4, … concurrent clients, a fixed time per level, letting background work drain between ' +
    'levels. Every answer counts: non-2xx answers and connection errors are errors. The knee is the last ' +
    'level whose throughput still rose by at least 10% with at most 1% errors.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const levels = ctx.quick ? [1, 4] : [1, 2, 4, 8, 16, 32, 64];
    const seconds = ctx.quick ? 3 : 20;
    const { orm, databaseUrl, temporalAddress, taskQueue } = await ctx.infra.backend('mixed');
    const rateLimiter = createRateLimiter(databaseUrl, 10_000_000);
    ctx.infra.onStop(() => rateLimiter.close());
    const big = '100000000';
    const api = await startBenchApi(ctx.infra, {
      orm,
      temporalAddress,
      rateLimiter,
      env: {
        TEMPORAL_TASK_QUEUE: taskQueue,
        DEFAULT_MONTHLY_CREDITS: big,
        DEFAULT_QUERY_DAILY_LIMIT: big,
        DEFAULT_QUERY_MONTHLY_LIMIT: big,
        DEFAULT_INGEST_DAILY_LIMIT: big,
        DEFAULT_INGEST_MONTHLY_LIMIT: big,
      },
    });
    const { secret, post } = await mixedAccount(orm, api.config.accountDefaults, api.baseUrl);
    const worker = spawnBenchWorker(ctx.infra, { databaseUrl, temporalAddress, taskQueue });
    const drain = () => waitForBackgroundWork(orm);

    const { peers, sessions } = await seedMixedWorkload(post, ctx.quick ? 4 : 24);
    await drain();

    const results: Level[] = [];
    for (const connections of levels) {
      const sample = await runLevel({
        baseUrl: api.baseUrl, apiKey: secret, connections, durationSeconds: seconds, maxRequests: 200_000,
        weights: WEIGHTS, questions: QUESTIONS, peers, sessions,
      });
      const level = summarizeLevel(connections, sample);
      results.push(level);
      ctx.log(`${connections} clients: ${level.requestsPerSecond} req/s, p50 ${level.p50Ms} ms, p95 ${level.p95Ms} ms, p99 ${level.p99Ms} ms, errors ${(level.errorRate * 100).toFixed(2)}%`);
      await drain();
    }
    worker.kill('SIGTERM');

    const knee = findKnee(results);
    const peak = results.reduce((a, b) => (b.requestsPerSecond > a.requestsPerSecond ? b : a));
    if (!ctx.quick) {
      await writeFile('docs/benchmarks-mixed.svg', lineChartSvg({
        title: 'Mixed workload: throughput and p95 latency by concurrency',
        xLabel: 'concurrent clients',
        leftLabel: 'requests per second',
        rightLabel: 'p95 latency (ms)',
        series: [
          { label: 'throughput (req/s)', color: '#1f77b4', axis: 'left', points: results.map((l) => ({ x: l.connections, y: l.requestsPerSecond })) },
          { label: 'p95 latency (ms)', color: '#d62728', axis: 'right', points: results.map((l) => ({ x: l.connections, y: l.p95Ms })) },
        ],
        marker: { x: knee.connections, label: `knee: ${knee.connections}` },
      }));
    }
    const metrics: Metric[] = [
      { id: 'mixed.knee.connections', label: 'Knee: concurrent clients where throughput stops rising', value: knee.connections, unit: '×' },
      { id: 'mixed.knee.rps', label: 'Throughput at the knee', value: knee.requestsPerSecond, unit: 'req/s',
        baseline: { label: '1 client', value: results[0]!.requestsPerSecond, kind: 'baseline' }, ratio: round(knee.requestsPerSecond / results[0]!.requestsPerSecond) },
      { id: 'mixed.knee.p50', label: 'p50 latency at the knee (all operations)', value: knee.p50Ms, unit: 'ms' },
      { id: 'mixed.knee.p95', label: 'p95 latency at the knee (all operations)', value: knee.p95Ms, unit: 'ms',
        baseline: { label: '1 client', value: results[0]!.p95Ms, kind: 'baseline' }, ratio: round(knee.p95Ms / results[0]!.p95Ms) },
      { id: 'mixed.knee.p99', label: 'p99 latency at the knee (all operations)', value: knee.p99Ms, unit: 'ms' },
      { id: 'mixed.knee.errorRate', label: 'Error rate at the knee (share of answers)', value: knee.errorRate, unit: '×' },
      { id: 'mixed.peak.rps', label: 'Highest throughput at any level', value: peak.requestsPerSecond, unit: 'req/s' },
    ];
    const ops = Object.keys(WEIGHTS) as MixedOp[];
    return {
      settings: { levels: levels.join(', '), 'seconds per level': seconds, workers: 1, mix: ops.map((o) => `${o} ${WEIGHTS[o]}%`).join(', ') },
      metrics,
      tables: [{
        title: 'Per level',
        columns: ['Clients', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors %', ...ops.map((o) => `${o} p95 ms`)],
        rows: results.map((l) => [l.connections, l.requestsPerSecond, l.p50Ms, l.p95Ms, l.p99Ms, round(l.errorRate * 100),
          ...ops.map((o) => l.perOpP95[o] ?? '—')]),
      }],
      runs: { levels: results },
      notes: [
        'Plot: ![throughput and p95 by concurrency](benchmarks-mixed.svg)',
        'API, load generator, worker, Temporal and PostgreSQL share the same 2 cores, so the knee is where the machine saturates, not only the API.',
        'Queries use a new idempotency key each (every one is charged and retrieves); message writes return at the receipt, their claims are derived in the background, and the time between levels lets that work finish.',
      ],
    };
  },
};

/** The mixed workload's corpus (Markdown files ingested live) and memory labels, through `post`. */
export async function seedMixedWorkload(post: (path: string, body: unknown) => Promise<unknown>, files: number) {
  for (let i = 0; i < files; i++) {
    const text = `# Station Vega ${i}\n\nProject Kestrel was founded in ${1900 + i} in Orlavik. Station Vega recorded ${i * 7} storms. ` +
      `The keeper was Ines Morales. Its harbour code is harbor${i}x and it studies migrating terns.\n`;
    await post('/v1/ingest/file', {
      filename: `vega-${i}.md`, contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'),
      dryRun: false, datedAt: '2026-11-01', idempotencyKey: `corpus-${i}-${randomUUID()}`,
    });
  }
  const peers = Array.from({ length: 8 }, (_, i) => `peer-${i}`);
  const sessions = Array.from({ length: 8 }, (_, i) => `session-${i}`);
  for (const p of peers) await post('/v1/workspaces/default/peers', { id: p });
  for (const s of sessions) await post('/v1/workspaces/default/sessions', { id: s });
  return { peers, sessions };
}

/** An account with a key of every scope the mix needs, and a POST to `baseUrl` with that key (2xx or it throws). */
export async function mixedAccount(orm: Orm, defaults: Config['accountDefaults'], baseUrl: string) {
  const account = await createAccount(orm.em.fork(), defaults, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
  const { secret } = await createApiKey(orm.em.fork(), account.id, {
    name: 'bench', scopes: ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'], maxPreset: 'accuracy',
  });
  const post = async (path: string, body: unknown) => {
    const res = await fetch(`${baseUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
    return res.json() as Promise<Record<string, unknown>>;
  };
  return { secret, post };
}
