import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { SCOPES } from '../../core/contracts/account.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { bound, sql } from '../../platform/db/sql.ts';
import { loadConfig } from '../../platform/config.ts';
import { inProcessExtraction } from '../../test/helpers/in-process-extraction.ts';
import { buildSourceRecords } from '../../core/ingest/build/build.ts';
import type { Boundary } from '../../core/retrieval/boundary.ts';
import { EVIDENCE_LIMIT, retrieve } from '../../core/retrieval/retrieve.ts';
import type { Strategy } from '../../core/retrieval/ranking.ts';
import { createSearchIndex, type SearchIndex } from '../../core/retrieval/search-index.ts';
import { recordTermRows } from '../../core/retrieval/terms.queries.ts';
import { retrievalSet, type Question } from '../../test/fixtures/query/retrieval-set.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { closedLoop } from '../lib/closed-loop.ts';
import type { Metric } from '../lib/results.ts';
import { median, round, summarize } from '../lib/stats.ts';

// Issue 7 acceptance: (a) retrieval quality of both presets next to plain BM25 on the labelled set,
// (b) evidence and context latency at 8 concurrent clients over 100,000+ excerpts next to the raw SQL
// full-text query that is the floor.

/**
 * Unmeasured requests before each case: enough for V8 to finish optimizing the hot code. After 64,
 * it still compiled about 100 functions during the next 160 requests (on its background threads,
 * beside the work being measured); after 600, about 20.
 */
const WARMUP = 600;

function settings(quick: boolean) {
  return quick
    ? { corpus: 5_000, requests: 40, runs: 1, concurrency: 8, warmup: 64 }
    : { corpus: 100_000, requests: 400, runs: 3, concurrency: 8, warmup: WARMUP };
}

const hash = (t: string) => createHash('sha256').update(t).digest('hex');
/** The corpus is ours: built in this process (the benchmark measures queries, not ingest isolation). */
const extraction = inProcessExtraction(loadConfig({}).extraction.limits);
const defaults = { monthlyCredits: 10_000_000, onboardingCredits: 0, queryDailyLimit: 10_000_000, ingestDailyLimit: 1000, queryMonthlyLimit: 10_000_000, ingestMonthlyLimit: 1000 };

export async function newAccount(orm: Orm) {
  return createAccount(orm.em.fork(), defaults, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
}

/** Ingests a document through the real build step (extraction, records, dedupe hashes) without Temporal. */
async function ingestDocument(em: EntityManager, accountId: string, filename: string, text: string): Promise<string> {
  const id = randomUUID();
  const bytes = Buffer.from(text);
  await bound(em, sql`insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, filename, content_type, dated_at)
    values (${id}, ${accountId}, 'file', 'queued', ${id}, ${id}, ${filename}, 'text/markdown', current_date)`);
  await bound(em, sql`insert into ingest_blob (job_id, account_id, bytes, sha256, size_bytes, content_type) values (${id}, ${accountId}, ${bytes}, ${hash(text)}, ${bytes.byteLength}, 'text/markdown')`);
  await buildSourceRecords(em, extraction, { jobId: id, fetch: null });
  return id;
}

async function recordConversation(em: EntityManager, accountId: string, c: ReturnType<typeof retrievalSet>['conversations'][number], at: number) {
  const peer = randomUUID();
  const session = randomUUID();
  const event = randomUUID();
  await bound(em, sql`insert into memory_peer (id, account_id, label) values (${peer}, ${accountId}, ${c.peer})`);
  await bound(em, sql`insert into memory_session (id, account_id, label) values (${session}, ${accountId}, ${c.session})`);
  await bound(em, sql`insert into memory_event (id, account_id, kind, status) values (${event}, ${accountId}, 'add_messages', 'succeeded')`);
  for (const [i, content] of c.messages.entries()) {
    await bound(em, sql`insert into memory_message (id, account_id, peer_id, session_id, event_id, position, role, content, available, created_at, content_hash)
      values (${randomUUID()}, ${accountId}, ${peer}, ${session}, ${event}, ${i}, 'user', ${content}, true, ${new Date(at + i * 60_000)}, ${hash(content)})`);
  }
  for (const [i, claim] of c.claims.entries()) {
    await bound(em, sql`insert into memory_claim (id, account_id, peer_id, session_id, content, state, authority, eligibility, support_status, head_revision, valid_from)
      values (${randomUUID()}, ${accountId}, ${peer}, ${session}, ${claim.content}, 'current', ${claim.authority}, 'eligible', 'supported', ${randomUUID()}, ${new Date(at + i * 3_600_000)})`);
  }
}

const boundaryOf = (accountId: string): Boundary => ({
  accountId, audiences: null, includeSources: true, includeMemory: true, sourceIds: null, peerIds: null, sessionIds: null, agentId: null,
});

type Quality = { recall5: number; recall10: number; mrr: number };

async function measureQuality(orm: Orm, index: SearchIndex, accountId: string, questions: Question[], strategy: Strategy) {
  const perKind = new Map<string, Quality & { n: number }>();
  const total = { recall5: 0, recall10: 0, mrr: 0 };
  for (const q of questions) {
    const r = await retrieve(orm.em.fork(), boundaryOf(accountId), { query: q.question, strategy }, { index });
    const top = r.ranked.slice(0, EVIDENCE_LIMIT);
    const at = top.findIndex((c) => c.text.includes(q.answer));
    const hit = { recall5: at >= 0 && at < 5 ? 1 : 0, recall10: at >= 0 ? 1 : 0, mrr: at >= 0 ? 1 / (at + 1) : 0 };
    const k = perKind.get(q.kind) ?? { recall5: 0, recall10: 0, mrr: 0, n: 0 };
    perKind.set(q.kind, { recall5: k.recall5 + hit.recall5, recall10: k.recall10 + hit.recall10, mrr: k.mrr + hit.mrr, n: k.n + 1 });
    total.recall5 += hit.recall5;
    total.recall10 += hit.recall10;
    total.mrr += hit.mrr;
  }
  const n = questions.length;
  return { total: { recall5: total.recall5 / n, recall10: total.recall10 / n, mrr: total.mrr / n }, perKind };
}

/**
 * A corpus of synthetic excerpts built in SQL (deterministic, fast to load): 60 words each, 2 of them
 * from a small topical vocabulary that the benchmark queries use and the rest from 19,683
 * made-up words, so a query term occurs in a few percent of the excerpts, as in a real collection.
 */
export function loadLatencyCorpus(orm: Orm, accountId: string, size: number, log: (m: string) => void) {
  return bulkLoadRecords(orm, accountId, size, null, log);
}

/** Rows per insert when the texts come from the benchmark process. */
const LOAD_BATCH = 5_000;

/**
 * `size` excerpts of one source in one account, with the full-text and impact index rows ingest would
 * have written. `text(i)` gives excerpt i's text; null: loadLatencyCorpus's synthetic words, made in SQL.
 */
export async function bulkLoadRecords(orm: Orm, accountId: string, size: number, text: ((i: number) => string) | null, log: (m: string) => void) {
  const em = orm.em.fork();
  const source = await ingestDocument(em, accountId, 'seed.md', '# Seed\n\nThe launch codename of project Sandpiper is quasar5150.\n');
  // Bulk load: maintaining the GIN full-text index row by row made the load several
  // times slower than building it once over the loaded rows, so the secondary indexes are dropped
  // and recreated from their own definitions (the schema is what the migrations made).
  const indexes = await bound<{ name: string; def: string }>(em, sql`select indexname as name, indexdef as def from pg_indexes
    where schemaname = current_schema() and tablename = 'record' and indexname <> 'record_pkey'`);
  for (const i of indexes) await bound(em, sql`drop index ${sql.raw(`"${i.name}"`)}`);
  log(`inserting ${size} excerpts`);
  if (!text) await syntheticRecords(em, accountId, source, size);
  for (let from = 0; text && from < size; from += LOAD_BATCH) {
    const texts = Array.from({ length: Math.min(LOAD_BATCH, size - from) }, (_, i) => text(from + i));
    await bound(em, sql`insert into record (id, account_id, source_id, kind, text, start_offset, end_offset, content_hash)
      select gen_random_uuid(), ${accountId}, ${source}, 'excerpt', t, 0, length(t), md5(t) from unnest(${texts}::text[]) t`);
  }
  log(`building ${indexes.length} indexes`);
  await em.transactional(async (tx) => {
    await bound(tx, sql`set local maintenance_work_mem = '256MB'`);
    for (const i of indexes) await bound(tx, sql.raw(i.def));
  });
  // The impact index rows ingest would have written, one batch per 2,000 records as ingest batches them
  // (replacing the seed document's own rows: the synthetic excerpts belong to the same source).
  log('building the impact index');
  await em.transactional(async (tx) => {
    await bound(tx, sql`set local work_mem = '256MB'`);
    await bound(tx, sql`delete from record_term where source_id = ${source}`);
    await bound(tx, sql`insert into record_term (account_id, source_id, lexeme, record_ids, impacts)
      ${recordTermRows(sql`(select id, account_id, source_id, tsv, (row_number() over (order by id) - 1) / 2000 as batch from record where source_id = ${source})`)}`);
  });
  // The source's totals, as ingest keeps them with its records (retrieval's statistics).
  await bound(em, sql`update source set record_count = r.n, record_length = r.len
    from (select count(*) as n, sum(cairn_tsv_length(tsv)) as len from record where source_id = ${source}) r where id = ${source}`);
  await bound(em, sql`vacuum analyze record`);
  await bound(em, sql`vacuum analyze record_term`);
}

/** loadLatencyCorpus's excerpts, made in SQL. */
async function syntheticRecords(em: EntityManager, accountId: string, source: string, size: number) {
  // Each made-up word is three of the 27 syllables, picked from the word's number by arithmetic: a
  // prebuilt array of all 19,683 words would be detoasted on every subscript (about 30x slower).
  await bound(em, sql`insert into record (id, account_id, source_id, kind, text, start_offset, end_offset, content_hash)
    with v as materialized (select string_to_array(${VOCABULARY}, ' ') as w, string_to_array(${SYLLABLES}, ' ') as y)
    select gen_random_uuid(), ${accountId}, ${source}, 'excerpt', t.text, 0, length(t.text), md5(t.text)
      from (select (select string_agg(case when k % 30 = 0 then v.w[1 + ((g * 31 + k * 17) % array_length(v.w, 1))]
                                           else v.y[1 + x / 27 % 27] || v.y[1 + x % 27] || v.y[1 + x / 729] end, ' ')
                      from generate_series(1, 60) k, lateral (select (g * 7919 + k * 104729) % 19683 as x) i) || ' ' || g as text
              from v, generate_series(1, ${size}) g) t`);
}

const SYLLABLES = 'ka lo mi ne ru sa te vo bri dan fel gor hul jin kes lum mor nis pat quo rin sul tor ulm vex wyn zar';

const VOCABULARY = (
  'project survey team field notes archive budget board season coast harbour island river valley station ' +
  'migration bird tern gull heron curlew plover sandpiper kestrel falcon owl wren finch lark swallow swift ' +
  'launch codename schedule report review spring summer autumn winter north south east west city town village ' +
  'leader member volunteer grant fund euros thousand annual monthly weekly data sample count record measure ' +
  'weather wind rain tide storm calm morning evening night observation nest egg chick feather wing flight route'
).trim();

export const LATENCY_QUERIES = [
  'launch codename of project sandpiper', 'annual budget review by the board', 'where do terns nest on the island',
  'field notes about storm and tide', 'who leads the survey team', 'migration route of the curlew in autumn',
  'monthly report on chick counts', 'grant fund for the harbour station', 'kestrel flight observation at dawn',
  'volunteer schedule for spring survey',
];

async function timeEach(n: number, concurrency: number, fn: (i: number) => Promise<unknown>): Promise<number[]> {
  const times: number[] = [];
  let next = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < n) {
      const i = next++;
      const t = performance.now();
      await fn(i);
      times.push(performance.now() - t);
    }
  }));
  return times;
}

export const query: Benchmark = {
  name: 'query',
  title: 'Query: retrieval quality (recall, MRR) and evidence/context latency',
  description:
    'Quality: the labelled set of test/fixtures/query/retrieval-set.ts (50 project documents ingested through the ' +
    'real build step, 30 recorded conversations with an inferred and a corrected claim each; 180 questions: exact, ' +
    'paraphrased, misspelt project names, and memory). A piece of evidence is relevant when it contains the ' +
    "question's answer string; recall@k and MRR over the top 10. The baseline is plain Okapi BM25 over the same " +
    'full-text candidates (no expansion, trigram, proximity or priors), computed in the same run. Latency: a fresh ' +
    'database with one account holding 100,000 synthetic excerpts (60 words from a fixed vocabulary each), the real ' +
    'API over HTTP with the real Temporal dev server, 8 concurrent ' +
    'clients, each request a new idempotencyKey; the retrieval step alone is timed in-process the same way; the floor ' +
    'is the single SQL full-text query (OR tsquery of the same words served by the GIN index, ts_rank order, limit 10) on the same pool. Medians of runs.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const s = settings(ctx.quick);

    // (a) Quality ------------------------------------------------------------------------------------
    const q = await ctx.infra.freshDatabase();
    const qa = await newAccount(q.orm);
    const set = retrievalSet();
    ctx.log(`ingesting ${set.documents.length} documents and ${set.conversations.length} conversations`);
    for (const d of set.documents) await ingestDocument(q.orm.em.fork(), qa.id, d.filename, d.text);
    let at = Date.now() - 90 * 86_400_000;
    for (const c of set.conversations) await recordConversation(q.orm.em.fork(), qa.id, c, (at += 3_600_000));
    await bound(q.orm.em.fork(), sql`analyze`);
    // Quality as the API serves it: source records ranked by the in-memory index.
    const qIndex = createSearchIndex({ orm: q.orm, maxBytes: 256 * 1048576 });
    await qIndex.warm(qa.id);
    const quality: Record<string, Awaited<ReturnType<typeof measureQuality>>> = {};
    for (const strategy of ['bm25', 'efficient', 'accuracy'] as Strategy[]) {
      quality[strategy] = await measureQuality(q.orm, qIndex, qa.id, set.questions, strategy);
      ctx.log(`${strategy}: recall@10 ${quality[strategy]!.total.recall10.toFixed(3)} MRR ${quality[strategy]!.total.mrr.toFixed(3)}`);
    }

    // (b) Latency ------------------------------------------------------------------------------------
    const l = await ctx.infra.freshDatabase();
    const la = await newAccount(l.orm);
    await loadLatencyCorpus(l.orm, la.id, s.corpus, ctx.log);
    const address = await ctx.infra.temporal();
    const api = await startBenchApi(ctx.infra, { orm: l.orm, temporalAddress: address, env: { TEMPORAL_TASK_QUEUE: `bench-query-${randomUUID()}`, SETTLEMENT_GRACE_SECONDS: '3600' } });
    const { secret } = await createApiKey(l.orm.em.fork(), la.id, { name: 'bench', scopes: [...SCOPES], maxPreset: 'accuracy' });
    // HTTP load comes from a worker thread (closed loop), so the client does not share the in-process
    // API's event loop; each request a new idempotencyKey, the queries in turn.
    const http = (mode: string, preset: string) => ({
      headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      requests: LATENCY_QUERIES.map((query) => ({ url: `${api.baseUrl}/v1/query`, body: JSON.stringify({ idempotencyKey: 'bench-{{uuid}}', mode, preset, query }) })),
    });
    // The API process's in-memory copy of the account's index (core/retrieval/search-index.ts) is loaded before the
    // clock starts, as a running service holds it; its load time and size are reported.
    const loadStarted = performance.now();
    if (!(await api.searchIndex.warm(la.id))) throw new Error('the latency corpus did not fit the in-memory index budget');
    const indexLoadMs = performance.now() - loadStarted;
    const indexMb = api.searchIndex.usage().bytes / 1048576;
    ctx.log(`in-memory index loaded in ${indexLoadMs.toFixed(0)} ms, ${indexMb.toFixed(0)} MB held`);
    const inProcess = (strategy: Strategy) => (i: number) =>
      retrieve(l.orm.em.fork(), boundaryOf(la.id), { query: LATENCY_QUERIES[i % LATENCY_QUERIES.length], strategy }, { index: api.searchIndex });

    const orQuery = (q: string) => q.split(' ').join(' | ');
    const floorQuery = (i: number) => bound(l.orm.em.fork(),
      sql`select r.id, ts_rank(r.tsv, tq, 1) as score from record r, to_tsquery('english', ${orQuery(LATENCY_QUERIES[i % LATENCY_QUERIES.length]!)}) tq
        where r.account_id = ${la.id} and r.tsv @@ tq order by score desc limit 10`);
    // How many rows each query matches: what the floor (and every engine) must at least look at.
    const matched: number[] = [];
    for (const q of LATENCY_QUERIES) {
      const [row] = await bound<{ n: string }>(l.orm.em.fork(), sql`select count(*) as n from record r where r.account_id = ${la.id} and r.tsv @@ to_tsquery('english', ${orQuery(q)})`);
      matched.push(Number(row!.n));
    }

    type Case = [string, string, ((i: number) => Promise<unknown>) | ReturnType<typeof http>];
    const cases: Case[] = [
      ['floor', 'Raw SQL full-text query (floor)', floorQuery],
      ['retrieve.efficient', 'Retrieval only, efficient (in-process)', inProcess('efficient')],
      ['retrieve.accuracy', 'Retrieval only, accuracy (in-process)', inProcess('accuracy')],
      ['evidence.efficient', 'POST /v1/query evidence, efficient', http('evidence', 'efficient')],
      ['evidence.accuracy', 'POST /v1/query evidence, accuracy', http('evidence', 'accuracy')],
      ['context.efficient', 'POST /v1/query context, efficient', http('context', 'efficient')],
      ['context.accuracy', 'POST /v1/query context, accuracy', http('context', 'accuracy')],
    ];
    // Warm-up to a steady state first: every pooled connection and the load generator have run the
    // statements (a cold connection parses and plans them first; prepared ones once each), and the
    // HTTP load generator's worker thread has compiled its client (the warm-up runs in it).
    const measure = async (c: Case[2], n: number) => {
      if (typeof c === 'function') {
        await timeEach(s.warmup, s.concurrency, c);
        return timeEach(n, s.concurrency, c);
      }
      const sample = await closedLoop({ ...c, connections: s.concurrency, durationSeconds: 600, maxRequests: n, warmup: { requests: s.warmup } });
      if (sample.errors) throw new Error(`${sample.errors} queries failed, first: ${sample.firstError}`);
      return sample.latenciesMs;
    };
    const samples = new Map<string, { p50: number[]; p95: number[] }>();
    for (let run = 1; run <= s.runs; run++) {
      for (const [id, , c] of cases) {
        const sm = summarize(await measure(c, s.requests));
        const acc = samples.get(id) ?? { p50: [], p95: [] };
        acc.p50.push(sm.p50);
        acc.p95.push(sm.p95);
        samples.set(id, acc);
        ctx.log(`run ${run} ${id}: p50 ${sm.p50.toFixed(2)} ms, p95 ${sm.p95.toFixed(2)} ms`);
      }
    }
    const p = (id: string, k: 'p50' | 'p95') => median(samples.get(id)![k]);
    const floor95 = p('floor', 'p95');
    const latency = (id: string, label: string, k: 'p50' | 'p95'): Metric => ({
      id: `query.${id}.${k}`, label: `${label}, ${k} at ${s.concurrency} concurrent`, value: round(p(id, k)), unit: 'ms',
      ...(k === 'p95' && id.startsWith('evidence') ? { target: { op: '<' as const, value: 50, text: '< 50 ms and within 3× of the floor' } } : {}),
      baseline: { label: `raw SQL floor ${k}`, value: round(p('floor', k)), kind: 'floor' }, ratio: round(p(id, k) / p('floor', k)),
    });
    const pct = (x: number) => round(x * 100);
    const base10 = quality.bm25!.total.recall10;
    const qualityMetric = (strategy: string, key: keyof Quality, label: string): Metric => ({
      id: `query.quality.${strategy}.${key}`, label: `${label}, ${strategy}`, value: pct(quality[strategy]!.total[key]), unit: '×',
      baseline: { label: `plain BM25 ${key}`, value: pct(quality.bm25!.total[key]), kind: 'baseline' },
      ...(strategy === 'accuracy' && key === 'recall10' ? { target: { op: '>' as const, value: pct(base10) + 10, text: '≥ baseline + 10 points' } } : {}),
    });
    return {
      settings: { questions: set.questions.length, documents: set.documents.length, conversations: set.conversations.length, 'latency corpus excerpts': s.corpus, 'requests per case per run': s.requests, 'warm-up requests per case': s.warmup, concurrency: s.concurrency, runs: s.runs },
      metrics: [
        ...(['efficient', 'accuracy'] as const).flatMap((st) => [
          qualityMetric(st, 'recall5', 'Recall@5 (%)'), qualityMetric(st, 'recall10', 'Recall@10 (%)'), qualityMetric(st, 'mrr', 'MRR (×100)'),
        ]),
        ...cases.filter(([id]) => id !== 'floor').flatMap(([id, label]) => [latency(id, label, 'p50'), latency(id, label, 'p95')]),
        { id: 'query.latency.matchedRows', label: 'Rows each latency query matches (median over the queries)', value: median(matched), unit: 'rows' },
        { id: 'query.index.loadMs', label: `In-memory index load, ${s.corpus} excerpts (once per API process and account)`, value: round(indexLoadMs), unit: 'ms' },
        { id: 'query.index.mb', label: 'In-memory index size (typed arrays, ids and lexemes held)', value: round(indexMb), unit: 'MB' },
      ],
      tables: [{
        title: 'Retrieval quality by question kind (recall@5 / recall@10 / MRR, %)',
        columns: ['kind', 'questions', 'BM25 baseline', 'efficient', 'accuracy'],
        rows: [...quality.accuracy!.perKind.keys()].map((kind) => {
          const cell = (st: string) => {
            const k = quality[st]!.perKind.get(kind)!;
            return `${pct(k.recall5 / k.n)} / ${pct(k.recall10 / k.n)} / ${pct(k.mrr / k.n)}`;
          };
          return [kind, quality.accuracy!.perKind.get(kind)!.n, cell('bm25'), cell('efficient'), cell('accuracy')];
        }),
      }, {
        title: `Latency at ${s.concurrency} concurrent clients (ms, medians of runs)`,
        columns: ['case', 'p50', 'p95', 'p95 / floor p95'],
        rows: cases.map(([id, label]) => [label, round(p(id, 'p50')), round(p(id, 'p95')), round(p(id, 'p95') / floor95)]),
      }],
      runs: Object.fromEntries([...samples.entries()].map(([k, v]) => [k, { p50: v.p50.map(round), p95: v.p95.map(round) }])),
      notes: [
        'Quality metrics are percentages (the unit column shows ×: the harness has no percent unit).',
        `HTTP cases include authentication, the idempotency row, metering (one reserve and one settle function call) and the result write; their load comes from a worker thread, after a warm-up of ${s.warmup} requests per case by the same generator (every pooled connection has prepared its statements, and the generator's HTTP client is compiled). The retrieval-only cases isolate the query engine.`,
        `Each latency query is an OR of its words and matches ${Math.min(...matched)} to ${Math.max(...matched)} of the ${s.corpus} excerpts. The floor ranks every match the way PostgreSQL alone can (ts_rank over the GIN index hits: every matching row fetched and its tsvector scored) before the top 10 are known. Retrieval ranks the records in the API process's in-memory copy of the account's index (core/retrieval/search-index.ts: BM25 over the same tsvectors, loaded before the clock starts; its load time and size are reported), so every match is still scored, but as typed-array elements in the API, and PostgreSQL fetches only the best records by id (docs/decisions/0005-query-path.md). The excerpts' words are equally frequent and the excerpts equally long, so no exact top-k pruning could stop early here.`,
      ],
    };
  },
};
