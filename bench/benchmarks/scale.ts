import { writeFileSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { SCOPES } from '../../core/contracts/account.ts';
import { bound, sql } from '../../platform/db/sql.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { closedLoop } from '../lib/closed-loop.ts';
import { loadLocomo } from '../lib/locomo.ts';
import { lineChartSvg } from '../lib/plot.ts';
import type { Metric } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { bulkLoadRecords, newAccount } from './query.ts';

// Issue 40: how the cost of one account's evidence query grows with the account, from 10,000 to
// 1,000,000 excerpts (3,000,000 with SCALE_SIZES), each size in a fresh database, beside the raw SQL
// floor of the same size. The excerpts are English words drawn with Zipf's law (rank r with weight 1/r)
// from the words of the LoCoMo conversations ranked by their real frequency, 20 to 120 words long.

const SIZES = (process.env.SCALE_SIZES ?? '10000,100000,1000000').split(',').map(Number);
const QUICK_SIZES = [2_000, 10_000];

/** The words of the LoCoMo dev conversations, most frequent first (a real vocabulary and its ranks). */
function vocabulary(): string[] {
  const counts = new Map<string, number>();
  for (const c of loadLocomo()) for (const t of c.turns) for (const w of t.text.toLowerCase().match(/[a-z]{2,}/g) ?? []) counts.set(w, (counts.get(w) ?? 0) + 1);
  return [...counts].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).map(([w]) => w);
}

/** A deterministic generator (mulberry32): the same corpus for the same size on every run. */
function random(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Excerpt `i`: Zipf-distributed words (inverse CDF of 1/r over the ranks, by bisection), 20 to 120 of them. */
function excerpts(words: string[]) {
  const cdf: number[] = [];
  let sum = 0;
  for (let r = 1; r <= words.length; r++) cdf.push((sum += 1 / r));
  const pick = (u: number) => {
    let lo = 0;
    let hi = cdf.length - 1;
    const target = u * sum;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < target) lo = mid + 1;
      else hi = mid;
    }
    return words[lo]!;
  };
  return (i: number) => {
    const next = random(i + 1);
    const length = 20 + Math.floor(100 * next() ** 2);
    return Array.from({ length }, () => pick(next())).join(' ');
  };
}

/** Queries of three to five words from several frequency bands (a common word matches much, a rare one little). */
function queries(words: string[]): string[] {
  const content = words.filter((w) => w.length > 3);
  const band = (from: number, n: number) => content.slice(from, from + n);
  const [common, middle, rare] = [band(40, 10), band(400, 10), band(3000, 10)];
  return Array.from({ length: 10 }, (_, i) => [common[i], middle[i], rare[i], middle[(i + 5) % 10]].join(' '));
}

type Size = {
  excerpts: number; loadSeconds: number; pgBytesPerExcerpt: number; fits: boolean; indexLoadMs: number | null; indexBytesPerExcerpt: number | null;
  coldFirstMs: number; evidence: { p50: number; p95: number }; floor: { p50: number; p95: number }; rssMb: number; matched: number;
};

async function measureSize(ctx: BenchContext, size: number, words: string[], qs: string[]): Promise<Size> {
  const db = await ctx.infra.freshDatabase();
  const account = await newAccount(db.orm);
  const text = excerpts(words);
  const started = performance.now();
  await bulkLoadRecords(db.orm, account.id, size, text, ctx.log);
  const loadSeconds = (performance.now() - started) / 1000;
  const [bytes] = await bound<{ n: string }>(db.orm.em.fork(), sql`select pg_total_relation_size('record') + pg_total_relation_size('record_term') as n`);
  const api = await startBenchApi(ctx.infra, { orm: db.orm, env: { TEMPORAL_TASK_QUEUE: `bench-scale-${randomUUID()}`, SETTLEMENT_GRACE_SECONDS: '3600' } });
  const { secret } = await createApiKey(db.orm.em.fork(), account.id, { name: 'bench', scopes: [...SCOPES], maxPreset: 'accuracy' });
  const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
  const ask = (query: string) => fetch(`${api.baseUrl}/v1/query`, { method: 'POST', headers, body: JSON.stringify({ idempotencyKey: `bench-${randomUUID()}`, mode: 'evidence', preset: 'accuracy', query }) })
    .then(async (r) => { if (r.status !== 200) throw new Error(`query answered ${r.status}: ${await r.text()}`); });
  // A cold account's first query: answered while (or instead of) its copy loads.
  const cold = performance.now();
  await ask(qs[0]!);
  const coldFirstMs = performance.now() - cold;
  const loadStarted = performance.now();
  const fits = await api.searchIndex.warm(account.id);
  const indexLoadMs = fits ? performance.now() - loadStarted : null;
  const indexBytes = api.searchIndex.usage().bytes;
  ctx.log(`${size}: loaded in ${loadSeconds.toFixed(0)} s, first query ${coldFirstMs.toFixed(0)} ms, copy ${fits ? `${(indexBytes / 1048576).toFixed(0)} MB in ${indexLoadMs!.toFixed(0)} ms` : 'does not fit the budget'}`);
  const requests = size >= 1_000_000 ? 120 : 400;
  const sample = await closedLoop({
    headers, connections: 8, durationSeconds: 900, maxRequests: requests, warmup: { requests: 80 },
    requests: qs.map((query) => ({ url: `${api.baseUrl}/v1/query`, body: JSON.stringify({ idempotencyKey: 'bench-{{uuid}}', mode: 'evidence', preset: 'accuracy', query }) })),
  });
  if (sample.errors) throw new Error(`${sample.errors} queries failed, first: ${sample.firstError}`);
  const orQuery = (q: string) => q.split(' ').join(' | ');
  const floorTimes: number[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (next < requests) {
      const q = qs[next++ % qs.length]!;
      const t = performance.now();
      await bound(db.orm.em.fork(), sql`select r.id, ts_rank(r.tsv, tq, 1) as score from record r, to_tsquery('english', ${orQuery(q)}) tq
        where r.account_id = ${account.id} and r.tsv @@ tq order by score desc limit 10`);
      floorTimes.push(performance.now() - t);
    }
  }));
  const counts = await Promise.all(qs.map(async (q) => Number((await bound<{ n: string }>(db.orm.em.fork(),
    sql`select count(*) as n from record r where r.account_id = ${account.id} and r.tsv @@ to_tsquery('english', ${orQuery(q)})`))[0]!.n)));
  const evidence = summarize(sample.latenciesMs);
  const floor = summarize(floorTimes);
  ctx.log(`${size}: evidence p50 ${evidence.p50.toFixed(1)} p95 ${evidence.p95.toFixed(1)} ms; floor p50 ${floor.p50.toFixed(1)} p95 ${floor.p95.toFixed(1)} ms`);
  await api.app.close();
  return {
    excerpts: size, loadSeconds, pgBytesPerExcerpt: Number(bytes!.n) / size, fits, indexLoadMs, indexBytesPerExcerpt: fits ? indexBytes / size : null,
    coldFirstMs, evidence: { p50: evidence.p50, p95: evidence.p95 }, floor: { p50: floor.p50, p95: floor.p95 },
    rssMb: process.memoryUsage().rss / 1048576, matched: counts.sort((a, b) => a - b)[counts.length >> 1]!,
  };
}

/** The slope of log(y) over log(x) between the first and last size: 1 = linear, 0 = flat. */
const slope = (rows: Size[], y: (s: Size) => number) => {
  const [a, b] = [rows[0]!, rows[rows.length - 1]!];
  return round(Math.log(y(b) / y(a)) / Math.log(b.excerpts / a.excerpts));
};

export const scale: Benchmark = {
  name: 'scale',
  title: 'Scale: one account from 10,000 to 1,000,000 excerpts',
  description:
    'Each size in a fresh database: one account whose excerpts are English words drawn by Zipf\'s law from the LoCoMo ' +
    'conversations\' vocabulary ranked by real frequency (20 to 120 words each, generated deterministically and bulk ' +
    'loaded as records with their full-text and impact index rows, as ingest writes them). The API runs in the ' +
    'benchmark process with its default index budget (QUERY_INDEX_MAX_MB 256); the first query reaches a cold account; ' +
    'then its copy is loaded (when it fits) and 8 clients send evidence queries (accuracy) of four words from several ' +
    'frequency bands over HTTP, beside the raw SQL full-text floor of the same size. SCALE_SIZES=10000,...,3000000 sets the sizes.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const words = vocabulary();
    const qs = queries(words);
    const rows: Size[] = [];
    for (const size of ctx.quick ? QUICK_SIZES : SIZES) rows.push(await measureSize(ctx, size, words, qs));
    const last = rows[rows.length - 1]!;
    const base = rows.find((r) => r.excerpts === 100_000) ?? rows[0]!;
    if (!ctx.quick) {
      writeFileSync(new URL('../../docs/benchmarks-scale.svg', import.meta.url), lineChartSvg({
        title: 'Evidence query at 8 clients against the account\'s size', xLabel: 'excerpts in the account', leftLabel: 'p95 (ms)', rightLabel: 'p50 (ms)',
        series: [
          { label: 'evidence p95', color: '#1f77b4', axis: 'left', points: rows.map((r) => ({ x: r.excerpts, y: r.evidence.p95 })) },
          { label: 'raw SQL floor p95', color: '#d62728', axis: 'left', points: rows.map((r) => ({ x: r.excerpts, y: r.floor.p95 })) },
          { label: 'evidence p50', color: '#2ca02c', axis: 'right', points: rows.map((r) => ({ x: r.excerpts, y: r.evidence.p50 })) },
        ],
      }));
    }
    const metrics: Metric[] = [
      {
        id: 'scale.evidence.p95.ratio', label: `Evidence p95 at ${last.excerpts} excerpts / at ${base.excerpts}`, value: round(last.evidence.p95 / base.evidence.p95), unit: '×',
        target: { op: '<=', value: 2, text: '≤ 2× (1M against 100k)' },
      },
      {
        id: 'scale.evidence.p95.floor', label: `Evidence p95 at ${last.excerpts} excerpts, against its raw SQL floor`, value: round(last.evidence.p95), unit: 'ms',
        target: { op: '<=', value: round(0.5 * last.floor.p95), text: '≤ 0.5 × the floor of the same size' },
        baseline: { label: 'raw SQL floor p95', value: round(last.floor.p95), kind: 'floor' }, ratio: round(last.evidence.p95 / last.floor.p95),
      },
      ...rows.filter((r) => r.indexBytesPerExcerpt !== null).slice(-1).map((r): Metric => ({
        id: 'scale.index.bytesPerExcerpt', label: `In-memory index bytes per excerpt (${r.excerpts} excerpts)`, value: round(r.indexBytesPerExcerpt!), unit: 'B',
        target: { op: '<=', value: 300, text: '≤ 300 bytes per excerpt' },
      })),
      { id: 'scale.cold.first', label: `First query on a cold account of ${base.excerpts} excerpts`, value: round(base.coldFirstMs), unit: 'ms', target: { op: '<=', value: 500, text: '≤ 500 ms' } },
    ];
    return {
      settings: { sizes: rows.map((r) => r.excerpts).join(', '), clients: 8, 'index budget (MB)': 256 },
      metrics,
      tables: [{
        title: 'Cost against the account\'s size (evidence, accuracy, 8 clients; ms)',
        columns: ['excerpts', 'evidence p50', 'evidence p95', 'floor p50', 'floor p95', 'p95 / floor', 'matched rows (median query)', 'copy fits', 'copy load (ms)', 'copy bytes / excerpt', 'PostgreSQL bytes / excerpt', 'first query cold (ms)', 'bulk load (s)', 'process RSS (MB)'],
        rows: rows.map((r) => [r.excerpts, round(r.evidence.p50), round(r.evidence.p95), round(r.floor.p50), round(r.floor.p95), round(r.evidence.p95 / r.floor.p95), r.matched,
          r.fits ? 'yes' : 'no', r.indexLoadMs === null ? '—' : round(r.indexLoadMs), r.indexBytesPerExcerpt === null ? '—' : round(r.indexBytesPerExcerpt),
          round(r.pgBytesPerExcerpt), round(r.coldFirstMs), round(r.loadSeconds), round(r.rssMb)]),
      }, {
        title: `Slopes from ${rows[0]!.excerpts} to ${last.excerpts} excerpts (log-log: 1 grows linearly with the account, 0 stays flat)`,
        columns: ['quantity', 'slope'],
        rows: [
          ['evidence p50', slope(rows, (r) => r.evidence.p50)], ['evidence p95', slope(rows, (r) => r.evidence.p95)],
          ['raw SQL floor p95', slope(rows, (r) => r.floor.p95)], ['matched rows', slope(rows, (r) => Math.max(1, r.matched))],
          ['first query, cold', slope(rows, (r) => r.coldFirstMs)], ['PostgreSQL bytes', slope(rows, (r) => r.pgBytesPerExcerpt * r.excerpts)],
        ],
      }],
      runs: Object.fromEntries(rows.map((r) => [String(r.excerpts), { p50: [round(r.evidence.p50)], p95: [round(r.evidence.p95)] }])),
      notes: [
        'The process RSS is the benchmark process\'s, which holds the API (and its index copies) and the load generator\'s worker thread.',
        'An account whose copy does not fit the budget is ranked in PostgreSQL (docs/decisions/0005-query-path.md): its row shows "copy fits: no".',
        'Not measured here yet: 10,000 accounts of 1,000 messages each (the many-accounts half of issue 40).',
      ],
    };
  },
};
