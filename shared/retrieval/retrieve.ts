import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, prepared } from '../db/sql.ts';
import type { Boundary } from './boundary.ts';
import { fetchCandidates, memoryColumns, type Candidate, type Match, type Tables } from './candidates.ts';
import { rank, type QueryTerms, type Scored, type Stats, type Strategy } from './ranking.ts';
import { INDEX_VERSION_SQL, type IndexTerm, type TermIndex } from './term-index.ts';
import { isStopWord, parseTsVector, words } from './text.ts';

/**
 * Retrieval, run once per query whatever the mode: candidates from every table the boundary includes,
 * re-ranked by the preset's strategy.
 *
 * - efficient: one pass, few candidates, PostgreSQL's ts_rank with the priors.
 * - accuracy: more candidates, prefix expansion of the query terms, BM25 with proximity and phrase
 *   order, idf-weighted coverage, and a trigram pass for query words that matched nothing (typos,
 *   partial names).
 * - bm25 (benchmark baseline only): plain BM25 over the full-text candidates, nothing else.
 */

export const PLANS: Record<Strategy, { candidates: number; expand: boolean; trigram: boolean }> = {
  efficient: { candidates: 30, expand: false, trigram: false },
  accuracy: { candidates: 120, expand: true, trigram: true },
  bm25: { candidates: 120, expand: false, trigram: false },
};

export const EVIDENCE_LIMIT = 10;
const DF_CAP = 1000;
const MAX_QUERY_WORDS = 24;

export type Retrieval = {
  ranked: Scored[];
  terms: QueryTerms;
  candidates: number;
  matchedTerms: string[];
  unmatchedTerms: string[];
  ms: number;
};

/** Query words usable in a tsquery (letters and digits), stop words removed, repeats removed. */
export function queryWords(text: string): string[] {
  return [...new Set(words(text).filter((w) => !isStopWord(w) && w.length > 1))].slice(0, MAX_QUERY_WORDS);
}

/** Whether a query word is matched as a prefix (accuracy's expansion: words of 5+ letters, no digits). */
const asPrefix = (w: string, expand: boolean) => expand && w.length >= 5 && !/\d/.test(w);

export function orQuery(ws: string[], expand: boolean): string {
  return ws.map((w) => (asPrefix(w, expand) ? `${w}:*` : w)).join(' | ');
}

type Analyzed = QueryTerms & {
  /** For the in-memory index: the account's record_index_version and each query word's lexemes. */
  version: string;
  wordLexemes: string[][];
  /** The query's lexemes as a set: the positions every candidate's vector keeps. */
  keep: ReadonlySet<string>;
  /** The memory tables' candidates (messages and claims), fetched by the same statement. */
  memory: Candidate[];
};

/** Source records only: the memory tables come with the query's first statement. */
const RECORDS_ONLY: Partial<Tables> = { records: true, messages: false, claims: false };

/**
 * What a query's retrieval reads first, as columns of one select list (`columns` and its `params`):
 * its lexemes, the account's index version, each word's lexemes, and the full-text candidates of the
 * memory tables (small tables: their ranking needs no other input). The query route selects them in
 * its operation claim's statement (shared/query/operations.ts), sparing a round trip; otherwise
 * retrieve() selects them on their own. Null when the query has no words to search for.
 */
export type Analysis = {
  columns: string; params: unknown[]; read(row: Record<string, unknown>): Analyzed;
  /** The query's words and its full-text match. */
  ws: string[]; match: Extract<Match, { type: 'fts' }>;
};

export function analysis(boundary: Boundary, query: string | undefined, strategy: Strategy, recordsOnly?: boolean): Analysis | null {
  const ws = query ? queryWords(query) : [];
  if (!query || ws.length === 0) return null;
  const { expand, candidates } = PLANS[strategy];
  const match: Analysis['match'] = { type: 'fts', tsquery: orQuery(ws, expand), words: ws, prefix: ws.map((w) => asPrefix(w, expand)) };
  const mem = recordsOnly ? null : memoryColumns(boundary, match, candidates);
  return {
    ws, match,
    columns: `to_tsvector('english', ?)::text as qv,
            ${INDEX_VERSION_SQL} as version,
            (select json_agg(tsvector_to_array(to_tsvector('english', w.word)) order by w.n)
               from unnest(?::text[]) with ordinality w(word, n)) as wl${mem ? `, ${mem.columns}` : ''}`,
    params: [query, boundary.accountId, ws, ...(mem?.params ?? [])],
    read(row) {
      const v = parseTsVector((row.qv as string | undefined) ?? null);
      const lexemes = [...v.positions.entries()].sort((a, b) => Math.min(...a[1]) - Math.min(...b[1])).map(([l]) => l);
      const keep = new Set(lexemes);
      return {
        lexemes, positions: v.positions, version: (row.version as string | undefined) ?? '', wordLexemes: (row.wl as string[][] | null) ?? [], keep,
        memory: mem ? mem.read(row, keep) : [],
      };
    },
  };
}

/** The analysis on its own: the query's first statement when nothing selected it before. */
async function analyze(em: EntityManager, a: Analysis): Promise<Analyzed> {
  const [row] = await prepared<Record<string, unknown>>(em, `select ${a.columns}`, a.params);
  return a.read(row ?? {});
}

/**
 * Source-record candidates ranked by the in-memory index when this process holds the account's
 * current copy, else by PostgreSQL (the copy's refresh then starts in the background).
 */
async function indexedRecords(
  em: EntityManager, index: TermIndex, b: Boundary, match: Extract<Match, { type: 'fts' }>, limit: number,
  analyzed: Promise<Analyzed>, keep: Promise<ReadonlySet<string>>, positions: boolean,
): Promise<Candidate[]> {
  const a = await analyzed;
  const terms: IndexTerm[] = match.words.flatMap((_, i) => (a.wordLexemes[i] ?? []).map((lexeme) => ({ lexeme, prefix: match.prefix[i]! })));
  // Without positions to rank by, the copy also says which query lexemes each record holds, and the
  // records' tsvectors need not be fetched.
  const top = index.top(b, a.version, terms, limit, positions ? {} : { report: a.lexemes });
  if (!top) return fetchCandidates(em, b, match, limit, RECORDS_ONLY, keep);
  if (!top.ids.length) return [];
  // Ranking by positions needs only the query lexemes' positions and each record's length.
  const vectors = positions ? { keep: a.lexemes, lengths: top.lengths } : { lexemes: top.lexemes };
  return fetchCandidates(em, b, { type: 'scored', ids: top.ids, scores: top.scores, tids: top.tids, ...vectors }, limit, RECORDS_ONLY, keep);
}

// Document frequencies change slowly and only steer ranking (never what is authorized), so each API
// process keeps them for a minute instead of counting them on every query.
const STATS_TTL_MS = 60_000;
const STATS_MAX_ENTRIES = 20_000;
const dfCache = new Map<string, { df: number; at: number }>();
let corpusSize: { n: number; at: number } | null = null;

async function statistics(em: EntityManager, accountId: string, lexemes: string[]): Promise<Stats> {
  const now = Date.now();
  const df = new Map<string, number>();
  const missing: string[] = [];
  const sizeCached = corpusSize !== null && now - corpusSize.at < STATS_TTL_MS;
  for (const l of lexemes) {
    const hit = dfCache.get(`${accountId}:${l}`);
    if (hit && now - hit.at < STATS_TTL_MS) df.set(l, hit.df);
    else missing.push(l);
  }
  const [counts, size] = await Promise.all([
    missing.length
      ? bound<{ lex: string; df: number }>(
          em,
          // From the impact index: one row per batch of records holding the lexeme, not one per record.
          `select l.lex, coalesce((select least(sum(cardinality(t.record_ids)), ${DF_CAP}) from record_term t
              where t.account_id = ? and t.lexeme = l.lex collate "C"), 0)::int as df
             from unnest(?::text[]) l(lex)`,
          [accountId, missing],
        )
      : Promise.resolve([]),
    // The planner's row estimate: an approximate corpus size is enough for idf, and costs no scan.
    sizeCached
      ? Promise.resolve([{ n: corpusSize!.n }])
      : bound<{ n: number }>(em, "select greatest(reltuples, 0)::bigint as n from pg_class where relname = 'record'", []),
  ]);
  if (dfCache.size > STATS_MAX_ENTRIES) dfCache.clear();
  for (const c of counts) {
    df.set(c.lex, Number(c.df));
    dfCache.set(`${accountId}:${c.lex}`, { df: Number(c.df), at: now });
  }
  const n = Number(size[0]?.n ?? 0);
  if (!sizeCached) corpusSize = { n, at: now };
  const docs = Math.max(n, DF_CAP * 2, ...[...df.values()].map((d) => d * 2));
  return { docs, df, avgLength: 0 };
}

function withAverageLength(stats: Stats, cands: Candidate[]): Stats {
  const lengths = cands.map((c) => c.vector.length);
  return { ...stats, avgLength: lengths.length ? lengths.reduce((a, b) => a + b, 0) / lengths.length : 1 };
}

export async function retrieve(
  em: EntityManager,
  boundary: Boundary,
  query: string | undefined,
  strategy: Strategy,
  /** `analyzed`: an analysis(boundary, query, strategy) and the row of a statement that selected its columns. */
  opts: { recordsOnly?: boolean; index?: TermIndex; analyzed?: { analysis: Analysis; row: Record<string, unknown> } } = {},
): Promise<Retrieval> {
  const started = performance.now();
  const tables = opts.recordsOnly ? { messages: false, claims: false } : undefined;
  const plan = PLANS[strategy];
  const reading = opts.analyzed?.analysis ?? analysis(boundary, query, strategy, opts.recordsOnly);
  if (!query || !reading) {
    // Scoped context without a query (or a query of stop words only): the most recent content in scope.
    const cands = query ? [] : await fetchCandidates(em, boundary, { type: 'recent' }, plan.candidates, tables);
    const terms = { lexemes: [], positions: new Map() };
    const ranked = rank(cands, terms, { docs: 1, df: new Map(), avgLength: 1 }, 'efficient');
    return { ranked, terms, candidates: cands.length, matchedTerms: [], unmatchedTerms: [], ms: performance.now() - started };
  }
  const { ws, match } = reading;
  const needStats = strategy !== 'efficient';
  // Messages and claims come with the first statement; source records after it (ranked in memory) or
  // beside it (ranked by PostgreSQL).
  const analyzed = opts.analyzed ? Promise.resolve(reading.read(opts.analyzed.row)) : analyze(em, reading);
  const keep = analyzed.then((a) => a.keep);
  const candidates = Promise.all([
    analyzed.then((a) => a.memory),
    opts.index && boundary.includeSources
      ? indexedRecords(em, opts.index, boundary, match, plan.candidates, analyzed, keep, strategy !== 'efficient')
      : fetchCandidates(em, boundary, match, plan.candidates, RECORDS_ONLY, keep),
  ]).then((parts) => parts.flat());
  const [terms, first, stats0] = await Promise.all([
    analyzed,
    candidates,
    needStats ? analyzed.then((t) => statistics(em, boundary.accountId, t.lexemes)) : Promise.resolve(null),
  ]);
  let cands = first;
  const present = new Set<string>();
  for (const c of cands) for (const l of c.vector.positions.keys()) present.add(l);
  const unmatched = terms.lexemes.filter((l) => !present.has(l));
  if (plan.trigram && unmatched.length) {
    // Name-like words (capitalised or with digits in the query) whose lexeme matched nothing: look for
    // near spellings (misspelt names, identifiers) by trigram word similarity.
    const nameLike = new Set(words(query.replace(/\b[\p{Ll}][\p{Ll}]*\b/gu, ' ')).concat(ws.filter((w) => /\d/.test(w))));
    const fuzzy = ws
      .filter((w) => w.length >= 4 && nameLike.has(w) && unmatched.some((l) => w.startsWith(l) || l.startsWith(w)))
      .slice(0, 2);
    const extra = await Promise.all(fuzzy.map((term) => fetchCandidates(em, boundary, { type: 'trgm', term }, 20, tables, keep)));
    cands = cands.concat(extra.flat());
  }
  const stats = withAverageLength(stats0 ?? { docs: 1, df: new Map(), avgLength: 1 }, cands);
  const ranked = rank(cands, terms, stats, strategy);
  return {
    ranked,
    terms,
    candidates: cands.length,
    matchedTerms: terms.lexemes.filter((l) => present.has(l)),
    unmatchedTerms: unmatched,
    ms: performance.now() - started,
  };
}
