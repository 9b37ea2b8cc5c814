import type { Candidate } from './candidates.ts';
import type { TsVector } from './text.ts';

/**
 * Second-stage scoring. `bm25` is Okapi BM25 over the candidates' own tsvectors (term frequencies and
 * lengths as PostgreSQL stored them) with document frequencies counted in the account's records.
 * `accuracy` adds proximity and phrase order, idf-weighted term coverage and trigram similarity;
 * every strategy but the baseline multiplies by record-kind, authority and recency priors.
 */

export type QueryTerms = {
  /** Lexemes of the query in order (PostgreSQL's english configuration), repeats removed. */
  lexemes: string[];
  /** lexeme -> positions in the query text (for phrase order). */
  positions: Map<string, number[]>;
};

export type Stats = { docs: number; df: Map<string, number>; avgLength: number };

export type Strategy = 'efficient' | 'accuracy' | 'bm25';

const K1 = 1.2;
const B = 0.75;

const KIND_PRIOR: Record<Candidate['kind'], number> = { fact: 1.1, excerpt: 1.0, link: 0.7, claim: 1.1, message: 1.0 };
/** Corrected claims (authority correction_memory) outrank inferred ones. */
const AUTHORITY_PRIOR: Record<string, number> = { correction_memory: 1.35 };

export function idf(stats: Stats, lexeme: string): number {
  const df = stats.df.get(lexeme) ?? 0;
  return Math.log(1 + (stats.docs - df + 0.5) / (df + 0.5));
}

export function bm25(v: TsVector, q: QueryTerms, stats: Stats): number {
  let s = 0;
  for (const lex of q.lexemes) {
    const tf = v.positions.get(lex)?.length ?? 0;
    if (!tf) continue;
    s += (idf(stats, lex) * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * v.length) / Math.max(1, stats.avgLength)));
  }
  return s;
}

/** 1 when the query's terms occur next to each other in query order; towards 0 as they spread out. */
export function proximity(v: TsVector, q: QueryTerms): number {
  const present = q.lexemes.filter((l) => v.positions.has(l));
  if (present.length < 2) return present.length === 1 && q.lexemes.length === 1 ? 1 : 0;
  // Smallest window holding one occurrence of every present term.
  const events = present.flatMap((l, i) => (v.positions.get(l) ?? []).map((p) => ({ p, i }))).sort((a, b) => a.p - b.p);
  const counts = new Array<number>(present.length).fill(0);
  let have = 0;
  let best = Infinity;
  for (let lo = 0, hi = 0; hi < events.length; hi++) {
    if (counts[events[hi]!.i]!++ === 0) have++;
    while (have === present.length) {
      best = Math.min(best, events[hi]!.p - events[lo]!.p + 1);
      if (--counts[events[lo]!.i]! === 0) have--;
      lo++;
    }
  }
  const window = present.length / best;
  // Phrase order: consecutive query terms that also follow each other in the text.
  let ordered = 0;
  for (let i = 1; i < present.length; i++) {
    const prev = v.positions.get(present[i - 1]!) ?? [];
    const cur = new Set(v.positions.get(present[i]!) ?? []);
    if (prev.some((p) => cur.has(p + 1) || cur.has(p + 2))) ordered++;
  }
  return 0.6 * window + 0.4 * (ordered / (present.length - 1));
}

export function coverage(v: TsVector, q: QueryTerms, stats: Stats): number {
  let total = 0;
  let got = 0;
  for (const l of q.lexemes) {
    const w = idf(stats, l);
    total += w;
    if (v.positions.has(l)) got += w;
  }
  return total ? got / total : 0;
}

function prior(c: Candidate, now: number): number {
  const ageDays = Math.max(0, (now - c.date.getTime()) / 86_400_000);
  const recency = 1 + 0.1 * Math.exp(-ageDays / 365);
  return KIND_PRIOR[c.kind] * (c.authority ? (AUTHORITY_PRIOR[c.authority] ?? 1) : 1) * recency;
}

export type Scored = Candidate & { score: number };

/** Scores and orders candidates (best first); identical content (same hash) is kept once. */
export function rank(cands: Candidate[], q: QueryTerms, stats: Stats, strategy: Strategy, now = Date.now()): Scored[] {
  const withVectors = cands.map((c) => ({ ...c, score: 0 }));
  if (strategy === 'bm25') {
    for (const c of withVectors) c.score = bm25(c.vector, q, stats);
  } else if (strategy === 'efficient') {
    const max = Math.max(1e-9, ...withVectors.map((c) => c.firstScore));
    for (const c of withVectors) c.score = (c.via === 'recent' ? 1 : c.firstScore / max) * prior(c, now);
  } else {
    const raw = withVectors.map((c) => bm25(c.vector, q, stats));
    const max = Math.max(1e-9, ...raw);
    withVectors.forEach((c, i) => {
      const text =
        c.via === 'recent'
          ? 1
          : 0.5 * (raw[i]! / max) + 0.2 * proximity(c.vector, q) + 0.3 * coverage(c.vector, q, stats) +
            (c.via === 'trgm' ? 0.4 * c.firstScore : 0);
      c.score = text * prior(c, now);
    });
  }
  withVectors.sort((a, b) => b.score - a.score || a.ref.id.localeCompare(b.ref.id));
  const seen = new Set<string>();
  return withVectors.filter((c) => c.score > 0 && !seen.has(c.contentHash) && seen.add(c.contentHash));
}
