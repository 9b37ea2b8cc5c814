import type { EntityManager } from '@mikro-orm/postgresql';
import { sql, type Sql } from '../../platform/db/sql.ts';
import { AccountIndex, type Filter, type Hit, type QueryWord, type SearchResult } from './account-index.ts';
import { CLAIM, MESSAGE, RECORD } from './bm25.ts';
import type { Boundary } from './boundary.ts';
import { candidateDoc, fallbackCandidates, fetchCandidates, fetchHits, type Candidate } from './candidates.ts';
import { analysisRow, fallbackStatistics, nearSpellings } from './candidates.queries.ts';
import { rank, type Ranked, type Scored, type Strategy } from './ranking.ts';
import { rerank } from './rerank.ts';
import type { SearchIndex } from './search-index.ts';
import { memoryVersion, recordVersion } from './search-index.queries.ts';
import { isStopWord, words } from './text.ts';

/**
 * Retrieval, run once per query whatever the mode: every searchable document of the boundary (source
 * records, memory messages and claims) ranked by BM25 with the account's statistics, messages helped by
 * their neighbours in the conversation, a claim and its message as one piece of evidence (bm25.ts,
 * account-index.ts). The API's in-memory copy of the account's index ranks when it is current
 * (search-index.ts); otherwise PostgreSQL finds the best candidates of each table and the same code
 * ranks them with statistics PostgreSQL counts.
 *
 * - efficient: the query's words as they are; the best evidence as ranked, with the priors.
 * - accuracy: words of five or more letters also match as prefixes; a name that matched nothing is
 *   searched by its near spellings in the account (misspelt names); with an embeddings
 *   provider, the documents nearest the question in meaning are fused in (reciprocal rank fusion); more
 *   candidates come back from PostgreSQL.
 * - bm25 (benchmark baseline only): BM25 alone, without neighbours, expansion or priors.
 */

export type Plan = { candidates: number; expand: boolean; spelling: boolean; adjacency: boolean; semantic: boolean };
export const PLANS: Record<Strategy, Plan> = {
  efficient: { candidates: 30, expand: false, spelling: false, adjacency: true, semantic: false },
  accuracy: { candidates: 120, expand: true, spelling: true, adjacency: true, semantic: true },
  bm25: { candidates: 120, expand: false, spelling: false, adjacency: false, semantic: false },
};

export const EVIDENCE_LIMIT = 10;
/** Hits fetched from PostgreSQL after ranking: the evidence, and room for identical content kept once. */
const FETCH_LIMIT = 2 * EVIDENCE_LIMIT;
const MAX_QUERY_WORDS = 24;
/** Misspelt names looked up per query. */
const MAX_MISSPELT = 2;
const KIND = { record: RECORD, message: MESSAGE, claim: CLAIM } as const;

export type Retrieval = {
  ranked: Scored[];
  /**
   * The semantic side (embeddings, accuracy only): `used`; `unavailable` when configured but the query
   * could not be embedded or the account's index was not in memory (ranked lexically); `off`.
   */
  semantic: 'used' | 'unavailable' | 'off';
  /** The rerank provider (accuracy only): `used`, `unavailable` when it failed (the lexical order stands), `off`. */
  rerank: 'used' | 'unavailable' | 'off';
  /** Documents scored (the copy's hits, or PostgreSQL's candidates). */
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

/** `words`: the query words that have lexemes, as index terms; `text`: those words as written. */
type Analyzed = { lexemes: string[]; versions: { records: number; memory: number }; words: QueryWord[]; text: string[] };

/**
 * What a query's retrieval reads first, as the columns of one select list: the account's index
 * versions and each query word's lexemes. A query selects them in the statement that claims its
 * operation (core/query/operations.ts, CLAIM_AND_ANALYSE), sparing a round trip; otherwise retrieve()
 * selects them on their own. Null when the query has no words to search for.
 */
export type Analysis = { columns: Sql; read(row: Record<string, unknown>): Analyzed };

export function analysis(boundary: Boundary, query: string | undefined, strategy: Strategy, plan = PLANS[strategy]): Analysis | null {
  const ws = query ? queryWords(query) : [];
  if (!query || ws.length === 0) return null;
  return {
    columns: sql`${recordVersion(boundary.accountId)} as record_version, ${memoryVersion(boundary.accountId)} as memory_version,
            (select json_agg(tsvector_to_array(to_tsvector('english', w.word)) order by w.n)
               from unnest(${ws}::text[]) with ordinality w(word, n)) as wl`,
    read(row) {
      const wl = (row.wl as string[][] | null) ?? [];
      const searched = ws.flatMap((w, i) => (wl[i]?.length ? [{ text: w, terms: wl[i]!.map((lexeme) => ({ lexeme, prefix: asPrefix(w, plan.expand) })) }] : []));
      return {
        lexemes: [...new Set(searched.flatMap((w) => w.terms.map((t) => t.lexeme)))],
        versions: { records: Number(row.record_version ?? 0), memory: Number(row.memory_version ?? 0) },
        words: searched.map((w) => w.terms),
        text: searched.map((w) => w.text),
      };
    },
  };
}

export const filterOf = (b: Boundary): Filter => ({
  records: b.includeSources,
  memory: b.includeMemory,
  audiences: b.audiences ? new Set(b.audiences) : null,
  sourceIds: b.sourceIds ? new Set(b.sourceIds) : null,
  peerIds: b.peerIds ? new Set(b.peerIds) : null,
  sessionIds: b.sessionIds ? new Set(b.sessionIds) : null,
  agentId: b.agentId,
});

const EVERYTHING: Filter = { records: true, memory: true, audiences: null, sourceIds: null, peerIds: null, sessionIds: null, agentId: null };


type Searched = { found: SearchResult; scored: number; candidate: (id: string) => Candidate | undefined };

/**
 * The hits of PostgreSQL's candidates: the best of each table by its first stage and the neighbours of
 * the messages among them, indexed and ranked by the same code as the copy, with the account's
 * statistics counted by PostgreSQL.
 */
async function fallback(em: EntityManager, b: Boundary, a: Analyzed, ws: QueryWord[], plan: Plan): Promise<Searched> {
  const cands = await fallbackCandidates(em, b, ws, a.text, plan.candidates, plan.adjacency);
  const byId = new Map(cands.map((c) => [c.ref.id, c]));
  const index = new AccountIndex();
  index.add(cands.map((c) => ({ kind: KIND[c.ref.table], doc: candidateDoc(c) })));
  const stats = await fallbackStatistics(em, b.accountId, index.coveredLexemes(ws));
  // The candidates are inside the boundary already (their statements applied it).
  const opts = { limit: FETCH_LIMIT, adjacency: plan.adjacency, stats };
  const found = index.search(EVERYTHING, ws, opts);
  return { found, scored: cands.length, candidate: (id) => byId.get(id) };
}

/** The hits of the in-memory copy, fetched from PostgreSQL (the boundary applied again there). */
async function fromCopy(em: EntityManager, b: Boundary, index: AccountIndex, ws: QueryWord[], plan: Plan, semantic?: Float32Array): Promise<Searched> {
  const found = index.search(filterOf(b), ws, { limit: FETCH_LIMIT, adjacency: plan.adjacency, ...(semantic ? { semantic } : {}) });
  const fetched = await fetchHits(em, b, found.hits);
  return { found, scored: found.hits.length, candidate: (id) => fetched.get(id) };
}

export async function retrieve(
  em: EntityManager,
  boundary: Boundary,
  query: string | undefined,
  strategy: Strategy,
  /**
   * `analyzed`: an analysis(boundary, query, strategy) and the row of a statement that selected its
   * columns. `plan`: another plan than the strategy's (the recall benchmark's ablation).
   */
  opts: { index?: SearchIndex; analyzed?: { analysis: Analysis; row: Record<string, unknown> }; plan?: Plan } = {},
): Promise<Retrieval> {
  const started = performance.now();
  const plan = opts.plan ?? PLANS[strategy];
  const reading = opts.analyzed?.analysis ?? analysis(boundary, query, strategy, plan);
  if (!query || !reading) {
    // Scoped context without a query (or a query of stop words only): the most recent content in scope.
    const cands = query ? [] : await fetchCandidates(em, boundary, { type: 'recent' }, plan.candidates);
    const ranked = rank(cands.map((c) => ({ cand: c, score: 1 })), strategy);
    return { ranked, semantic: 'off', rerank: 'off', candidates: cands.length, matchedTerms: [], unmatchedTerms: [], ms: performance.now() - started };
  }
  const row = opts.analyzed?.row ?? (await analysisRow(em, reading.columns));
  const a = reading.read(row);
  // The question is embedded while the copy is checked (accuracy, with an embeddings provider).
  const embedder = plan.semantic ? opts.index?.embedder : null;
  const vector = embedder ? embedder.embed([query]).then(([v]) => v, () => undefined) : Promise.resolve(undefined);
  const copy = opts.index ? await opts.index.current(boundary.accountId, a.versions) : null;
  const semantic = copy ? await vector : undefined;
  const search = (ws: QueryWord[]) => (copy ? fromCopy(em, boundary, copy, ws, plan, semantic) : fallback(em, boundary, a, ws, plan));
  let result = await search(a.words);
  const matched = new Set(a.words.flatMap((w, i) => w.filter((_, j) => result.found.matched[i]![j]).map((t) => t.lexeme)));
  const unmatched = a.lexemes.filter((l) => !matched.has(l));
  if (plan.spelling && unmatched.length) {
    // Names (capitalised in the query, or with digits) that matched nothing are searched again by their
    // near spellings in the account, each counting as much as it is similar.
    const nameLike = new Set(words(query.replace(/\b[\p{Ll}][\p{Ll}]*\b/gu, ' ')).concat(a.text.filter((w) => /\d/.test(w))));
    const misspelt = a.text.filter((w, i) => w.length >= 4 && nameLike.has(w) && a.words[i]!.every((t) => !matched.has(t.lexeme))).slice(0, MAX_MISSPELT);
    const near = misspelt.length ? await nearSpellings(em, boundary.accountId, misspelt) : new Map();
    if (near.size) {
      const corrected = a.words.map((w, i) => [...w, ...(near.get(a.text[i]!) ?? []).map((n: { lexeme: string; similarity: number }) => ({ lexeme: n.lexeme, prefix: false, weight: n.similarity }))]);
      result = await search(corrected);
    }
  }
  const hits: Ranked[] = result.found.hits.flatMap((h: Hit) => {
    const cand = result.candidate(h.id);
    if (!cand) return []; // gone from the boundary since the copy saw it
    const support = h.support ? result.candidate(h.support) : undefined;
    return [{ cand, score: h.score, ...(support ? { supports: [support] } : {}) }];
  });
  const ranked = rank(hits, strategy);
  const reranker = plan.semantic ? opts.index?.reranker : null;
  const reranked = reranker ? await rerank(reranker, query, ranked) : null;
  return {
    ranked: reranked ?? ranked,
    semantic: !embedder ? 'off' : semantic ? 'used' : 'unavailable',
    rerank: !reranker ? 'off' : reranked ? 'used' : 'unavailable',
    candidates: result.scored,
    matchedTerms: a.lexemes.filter((l) => matched.has(l)),
    unmatchedTerms: unmatched,
    ms: performance.now() - started,
  };
}
