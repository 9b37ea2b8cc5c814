import { randomBytes, randomUUID } from 'node:crypto';
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

/** `npm run cluster` with `replicas` APIs and `workers` workers on a new database (dropped at the end of the run). */
async function startShape(ctx: BenchContext, replicas: number, workers: number, env: Record<string, string> = {}) {
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
  ctx.log(`${replicas} API and ${workers} worker processes: starting npm run cluster`);
  const cluster = await spawnCluster({
    DATABASE_URL: url.toString(), DBNAME: `${name}_temporal`, VISIBILITY_DBNAME: `${name}_temporal_vis`, DATA_DIR: dataDir,
    CLUSTER_PORT: '18100', CLUSTER_APIS: String(replicas), CLUSTER_WORKERS: String(workers), LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_MINUTE: '1000000', DEFAULT_MONTHLY_CREDITS: BIG, DEFAULT_QUERY_DAILY_LIMIT: BIG, DEFAULT_QUERY_MONTHLY_LIMIT: BIG,
    DEFAULT_INGEST_DAILY_LIMIT: BIG, DEFAULT_INGEST_MONTHLY_LIMIT: BIG, ...env,
  });
  ctx.infra.onStop(() => cluster.stop());
  const orm = await createOrm(url.toString());
  ctx.infra.onStop(() => orm.close());
  const defaults = loadConfig({ DEFAULT_MONTHLY_CREDITS: BIG, DEFAULT_QUERY_DAILY_LIMIT: BIG, DEFAULT_QUERY_MONTHLY_LIMIT: BIG, DEFAULT_INGEST_DAILY_LIMIT: BIG, DEFAULT_INGEST_MONTHLY_LIMIT: BIG }).accountDefaults;
  return { cluster, orm, defaults };
}

async function measureShape(ctx: BenchContext, replicas: number, connections: number, seconds: number): Promise<Level> {
  const { cluster, orm, defaults } = await startShape(ctx, replicas, replicas);
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

type Copies = { api: string; bytes: number; accounts: number; hits: number; misses: number };

/** One API's index copies, from its /metrics (the cluster runs with METRICS_OPEN). */
async function copiesOf(api: string, port: number): Promise<Copies> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const value = (name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  return { api, bytes: value('cairn_query_index_bytes'), accounts: value('cairn_query_index_accounts'), hits: value('cairn_query_index_hits'), misses: value('cairn_query_index_misses') };
}

/**
 * Account affinity: `accounts` accounts with the same small corpus each, then rounds of one evidence
 * query per account through the balancer; each API's index copies read from its /metrics afterwards.
 */
async function measureAffinity(ctx: BenchContext, replicas: number, accounts: number, rounds: number): Promise<Copies[]> {
  const { cluster, orm, defaults } = await startShape(ctx, replicas, 1, { METRICS_OPEN: 'true' });
  const keys: { secret: string }[] = [];
  for (let a = 0; a < accounts; a++) {
    const account = await mixedAccount(orm, defaults, cluster.url);
    await seedMixedWorkload(account.post, ctx.quick ? 2 : 6);
    keys.push(account);
  }
  await waitForBackgroundWork(orm);
  for (let r = 0; r < rounds; r++) {
    await Promise.all(keys.map(async ({ secret }, a) => {
      const res = await fetch(`${cluster.url}/v1/query`, {
        method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
        body: JSON.stringify({ mode: 'evidence', query: QUESTIONS[(r + a) % QUESTIONS.length], idempotencyKey: randomUUID() }),
      });
      if (!res.ok) throw new Error(`query answered ${res.status}: ${await res.text()}`);
    }));
  }
  const copies = await Promise.all(Array.from({ length: replicas }, (_, i) => copiesOf(`api-${i + 1}`, cluster.layout.api(i).api)));
  ctx.log(`affinity, ${replicas} API(s): ${copies.map((c) => `${c.api} ${c.accounts} accounts ${round(c.bytes / 1024)} KiB, ${c.hits} hits ${c.misses} misses`).join('; ')}`);
  await cluster.stop();
  return copies;
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
    const accounts = ctx.quick ? 4 : 12;
    const rounds = ctx.quick ? 3 : 10;
    const affinity = { one: await measureAffinity(ctx, 1, accounts, rounds), two: await measureAffinity(ctx, 2, accounts, rounds) };
    const perApi = (c: Copies[]) => round(c.reduce((n, x) => n + x.bytes, 0) / c.length / 1_048_576);
    const hitRate = (c: Copies[]) => round(c.reduce((n, x) => n + x.hits, 0) / Math.max(1, c.reduce((n, x) => n + x.hits + x.misses, 0)));
    const metrics: Metric[] = [
      { id: 'cluster.two.rps', label: `Throughput, 2 APIs + 2 workers, ${connections} clients`, value: two.requestsPerSecond, unit: 'req/s',
        baseline: { label: '1 API + 1 worker', value: one.requestsPerSecond, kind: 'baseline' }, ratio: round(two.requestsPerSecond / one.requestsPerSecond) },
      { id: 'cluster.two.p95', label: 'p95 latency, 2 APIs + 2 workers (all operations)', value: two.p95Ms, unit: 'ms',
        baseline: { label: '1 API + 1 worker', value: one.p95Ms, kind: 'baseline' }, ratio: round(two.p95Ms / one.p95Ms) },
      { id: 'cluster.one.rps', label: 'Throughput, 1 API + 1 worker', value: one.requestsPerSecond, unit: 'req/s' },
      { id: 'cluster.one.p95', label: 'p95 latency, 1 API + 1 worker', value: one.p95Ms, unit: 'ms' },
      { id: 'cluster.two.errorRate', label: 'Error rate, 2 APIs + 2 workers (share of answers)', value: two.errorRate, unit: '×' },
      { id: 'cluster.affinity.indexPerApi', label: `Index copies per API, 2 APIs (${accounts} accounts, account affinity)`, value: perApi(affinity.two), unit: 'MB', target: { op: '<', value: 0.6, text: '<= 0.6× 1 API (issue 40)', of: 'ratio' },
        baseline: { label: '1 API', value: perApi(affinity.one), kind: 'baseline' }, ratio: round(perApi(affinity.two) / perApi(affinity.one)) },
      { id: 'cluster.affinity.hitRate', label: 'Queries ranked from an index copy, 2 APIs', value: hitRate(affinity.two), unit: '×',
        baseline: { label: '1 API', value: hitRate(affinity.one), kind: 'baseline' } },
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
      }, {
        title: `Account affinity: index copies per API after ${rounds} rounds of one evidence query for each of ${accounts} accounts`,
        columns: ['APIs', 'API', 'accounts held', 'index KiB', 'hits', 'misses'],
        rows: [...affinity.one, ...affinity.two].map((c, i) => [i < affinity.one.length ? 1 : 2, c.api, c.accounts, round(c.bytes / 1024), c.hits, c.misses]),
      }],
      runs: { order: order.join(', '), levels: runs },
      notes: [
        'Every process (load generator, balancer, APIs, workers, their extraction processes, the Temporal server and PostgreSQL) shares the same 2 cores, so a second API and worker add CPU demand, not CPU, and 2 + 2 loses throughput here: two more event loops, pools and idle extraction processes to schedule, two workers polling three task queues and dispatching memory events each. The mixed workload is one account, so account affinity sends all of it to that account\'s home API. Replicas pay off when each gets cores of its own (docs/operations.md, Scaling).',
        'Account affinity: the balancer sends each account to the API that rendezvous hashing picks for it, so with 2 APIs each holds the copies of its own accounts only (the mean per API is half the 1-API total when no copy is held twice; the table shows how the accounts fell).',
      ],
    };
  },
};
