import type { Candidate } from './candidates.ts';

/**
 * The final order of what retrieval found: the index's BM25 scores (bm25.ts) with the priors of kind,
 * authority and recency.
 */

export type Strategy = 'efficient' | 'accuracy' | 'bm25';

const KIND_PRIOR: Record<Candidate['kind'], number> = { fact: 1.1, excerpt: 1.0, link: 0.7, claim: 1.1, message: 1.0 };
/** Corrected claims (authority correction_memory) outrank inferred ones. */
const AUTHORITY_PRIOR: Record<string, number> = { correction_memory: 1.35 };

function prior(c: Candidate, now: number): number {
  const ageDays = Math.max(0, (now - c.date.getTime()) / 86_400_000);
  const recency = 1 + 0.1 * Math.exp(-ageDays / 365);
  return KIND_PRIOR[c.kind] * (c.authority ? (AUTHORITY_PRIOR[c.authority] ?? 1) : 1) * recency;
}

/** A candidate with its search score and, for a claim, the message it was derived from. */
export type Ranked = { cand: Candidate; score: number; supports?: Candidate[] };
export type Scored = Candidate & { score: number; supports?: Candidate[] };

/**
 * Final order (best first): the search score relative to the best, times the priors of kind, authority
 * and recency (except for the bm25 baseline). Identical content (same hash) is kept once.
 */
export function rank(hits: Ranked[], strategy: Strategy, now = Date.now()): Scored[] {
  const max = Math.max(1e-9, ...hits.map((h) => h.score));
  const scored: Scored[] = hits.map(({ cand: c, score, supports }) => {
    const text = strategy === 'bm25' ? score : c.via === 'recent' ? 1 : score / max;
    return { ...c, score: strategy === 'bm25' ? text : text * prior(c, now), ...(supports ? { supports } : {}) };
  });
  scored.sort((a, b) => b.score - a.score || a.ref.id.localeCompare(b.ref.id));
  const seen = new Set<string>();
  return scored.filter((c) => c.score > 0 && !seen.has(c.contentHash) && seen.add(c.contentHash));
}
