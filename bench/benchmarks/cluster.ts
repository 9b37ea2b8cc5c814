import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { spawnCluster } from '../../runners/cluster/spawn.ts';
import { loadConfig } from '../../platform/config.ts';
import { ensureDatabase } from '../../runners/postgres/embedded.ts';
import { createOrm } from '../../platform/db/orm.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { waitForBackgroundWork } from '../lib/drain.ts';
import { dropDatabase } from '../lib/infra.ts';
import type { Metric } from '../lib/results.ts';
import { round } from '../lib/stats.ts';
import { mixedAccount, QUESTIONS, runLevel, seedMixedWorkload, summarizeLevel, WEIGHTS, type Level } from './mixed.ts';

// Issue 30: the mixed workload (bench/benchmarks/mixed.ts) against `npm run cluster` (the real Temporal
// server on PostgreSQL, the local balancer) with 1 API and 1 worker, then 2 of each, at the same
// concurrency. On this 2-core machine everything shares the same cores, so little gain is expected.

const BIG = '100000000';

async function measureShape(ctx: BenchContext, replicas: number, connections: number, seconds: number): Promise<Level> {
  const { adminUrl } = await ctx.infra.postgres();
  const name = `cairn_bench_${randomBytes(4).toString('hex')}`;
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'cairn-bench-cluster-'));
  ctx.infra.onStop(async () => {
    for (const db of [name, `${name}_temporal`, `${name}_temporal_vis`]) await dropDatabase(adminUrl, db);
    await rm(dataDir, { recursive: true, force: true });
  });
  ctx.log(`${replicas} API and ${replicas} worker processes: starting npm run cluster`);
  const cluster = await spawnCluster({
    DATABASE_URL: url.toString(), DBNAME: `${name}_temporal`, VISIBILITY_DBNAME: `${name}_temporal_vis`, DATA_DIR: dataDir,
    CLUSTER_PORT: '18100', CLUSTER_APIS: String(replicas), CLUSTER_WORKERS: String(replicas), LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000', DEFAULT_MONTHLY_CREDITS: BIG, DEFAULT_QUERY_DAILY_LIMIT: BIG, DEFAULT_QUERY_MONTHLY_LIMIT: BIG,
    DEFAULT_INGEST_DAILY_LIMIT: BIG, DEFAULT_INGEST_MONTHLY_LIMIT: BIG,
  });
  ctx.infra.onStop(() => cluster.stop());
  const orm = await createOrm(url.toString());
  ctx.infra.onStop(() => orm.close());
  const defaults = loadConfig({ DEFAULT_MONTHLY_CREDITS: BIG, DEFAULT_QUERY_DAILY_LIMIT: BIG, DEFAULT_QUERY_MONTHLY_LIMIT: BIG, DEFAULT_INGEST_DAILY_LIMIT: BIG, DEFAULT_INGEST_MONTHLY_LIMIT: BIG }).accountDefaults;
  const { secret, post } = await mixedAccount(orm, defaults, cluster.url);
  const { peers, sessions } = await seedMixedWorkload(post, ctx.quick ? 4 : 24);
  await waitForBackgroundWork(orm);
  const sample = await runLevel({
    baseUrl: cluster.url, apiKey: secret, connections, durationSeconds: seconds, maxRequests: 200_000,
    weights: WEIGHTS, questions: QUESTIONS, peers, sessions,
  });
  const level = summarizeLevel(connections, sample);
  ctx.log(`${replicas}+${replicas}: ${level.requestsPerSecond} req/s, p50 ${level.p50Ms} ms, p95 ${level.p95Ms} ms, errors ${(level.errorRate * 100).toFixed(2)}%`);
  await waitForBackgroundWork(orm);
  await cluster.stop();
  return level;
}

/** The mean of runs of one shape (throughput, percentiles and error rate). */
function meanLevel(levels: Level[]): Level {
  const mean = (f: (l: Level) => number) => round(levels.reduce((n, l) => n + f(l), 0) / levels.length);
  return { ...levels[0]!, requestsPerSecond: mean((l) => l.requestsPerSecond), p50Ms: mean((l) => l.p50Ms), p95Ms: mean((l) => l.p95Ms), p99Ms: mean((l) => l.p99Ms), errorRate: mean((l) => l.errorRate) };
}

export const cluster: Benchmark = {
  name: 'cluster',
  title: 'The cluster (npm run cluster): mixed workload with 1 and with 2 API and worker processes',
  description:
    'The mixed workload (35% evidence, 20% context, 10% answer queries, 25% message writes, 10% live file ingests; ' +
    'the mixed benchmark\'s generator, closed loop in a worker thread) through `npm run cluster`\'s balancer: the real ' +
    'Temporal server v1.29.1 on PostgreSQL, first 1 API and 1 worker process, then 2 of each, each shape on a new ' +
    'database with the same corpus, at the same concurrency for the same time, in the order 1, 2, 2, 1; the metrics are the means of each shape\'s two runs. Every answer counts: non-2xx answers ' +
    'and connection errors are errors.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const connections = ctx.quick ? 4 : 8;
    const seconds = ctx.quick ? 5 : 45;
    // ABBA order, so a drift in the machine's other load weighs on both shapes alike.
    const order = ctx.quick ? [1, 2] : [1, 2, 2, 1];
    const runs: { replicas: number; level: Level }[] = [];
    for (const replicas of order) runs.push({ replicas, level: await measureShape(ctx, replicas, connections, seconds) });
    const [one, two] = [1, 2].map((r) => meanLevel(runs.filter((x) => x.replicas === r).map((x) => x.level))) as [Level, Level];
    const metrics: Metric[] = [
      { id: 'cluster.two.rps', label: `Throughput, 2 APIs + 2 workers, ${connections} clients`, value: two.requestsPerSecond, unit: 'req/s',
        baseline: { label: '1 API + 1 worker', value: one.requestsPerSecond, kind: 'baseline' }, ratio: round(two.requestsPerSecond / one.requestsPerSecond) },
      { id: 'cluster.two.p95', label: 'p95 latency, 2 APIs + 2 workers (all operations)', value: two.p95Ms, unit: 'ms',
        baseline: { label: '1 API + 1 worker', value: one.p95Ms, kind: 'baseline' }, ratio: round(two.p95Ms / one.p95Ms) },
      { id: 'cluster.one.rps', label: 'Throughput, 1 API + 1 worker', value: one.requestsPerSecond, unit: 'req/s' },
      { id: 'cluster.one.p95', label: 'p95 latency, 1 API + 1 worker', value: one.p95Ms, unit: 'ms' },
      { id: 'cluster.two.errorRate', label: 'Error rate, 2 APIs + 2 workers (share of answers)', value: two.errorRate, unit: '×' },
    ];
    const ops = Object.keys(WEIGHTS) as (keyof typeof WEIGHTS)[];
    return {
      settings: { clients: connections, 'seconds per shape': seconds, mix: ops.map((o) => `${o} ${WEIGHTS[o]}%`).join(', ') },
      metrics,
      tables: [{
        title: 'Per run, in the order run',
        columns: ['APIs + workers', 'req/s', 'p50 ms', 'p95 ms', 'p99 ms', 'errors %', ...ops.map((o) => `${o} p95 ms`)],
        rows: runs.map(({ replicas, level }) => [`${replicas} + ${replicas}`, level.requestsPerSecond, level.p50Ms, level.p95Ms, level.p99Ms,
          round(level.errorRate * 100), ...ops.map((o) => level.perOpP95[o] ?? '—')]),
      }],
      runs: { order: order.join(', '), levels: runs },
      notes: [
        'Every process (load generator, balancer, APIs, workers, their extraction processes, the Temporal server and PostgreSQL) shares the same 2 cores, so a second API and worker add CPU demand, not CPU, and 2 + 2 loses throughput here: two more event loops, pools and idle extraction processes to schedule, two workers polling three task queues and dispatching memory events each, and above all the index copies: each API keeps its own copy of the account\'s index and brings it up to date after the writes (35% of the mix), so that work is done twice, and the balancer\'s alternation gives each copy every other query. Replicas pay off when each gets cores of its own (docs/operations.md, Sizing for N machines).',
      ],
    };
  },
};
