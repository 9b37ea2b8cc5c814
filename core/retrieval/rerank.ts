import { z } from 'zod';
import type { RerankConfig } from '../../platform/config.ts';
import type { Scored } from './ranking.ts';

/**
 * The optional rerank provider (RERANK_*), speaking the common rerank protocol (Cohere, Jina, vLLM, and
 * others): `POST {RERANK_BASE_URL}/rerank` with `{ model, query, documents, top_n }`, answered
 * `{ results: [{ index, relevance_score }] }`. Accuracy queries send their best RERANK_TOP_N hits and
 * take the provider's order for them; the scores stay those of the positions (a descending sequence),
 * so nothing downstream sees a new scale. Without it, or when it fails, the lexical order stands.
 */
export type Reranker = { model: string; topN: number; order(query: string, documents: string[]): Promise<number[]> };

/** Longest document sent (characters): providers cut or refuse inputs past their token limit. */
const MAX_DOCUMENT_CHARS = 4000;

const Answer = z.object({ results: z.array(z.object({ index: z.number().int().min(0), relevance_score: z.number() })) });

export function createReranker(cfg: RerankConfig): Reranker {
  const url = `${cfg.baseUrl.replace(/\/$/, '')}/rerank`;
  return {
    model: cfg.model,
    topN: cfg.topN,
    /** The documents' indexes, most relevant first (every index once); throws when the provider fails. */
    async order(query, documents) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
        body: JSON.stringify({ model: cfg.model, query, documents: documents.map((d) => d.slice(0, MAX_DOCUMENT_CHARS)), top_n: documents.length }),
        signal: AbortSignal.timeout(cfg.timeoutMs),
      });
      if (!res.ok) throw new Error(`rerank provider answered ${res.status}`);
      const { results } = Answer.parse(await res.json());
      const seen = new Set<number>();
      const ranked = [...results].sort((a, b) => b.relevance_score - a.relevance_score).map((r) => r.index)
        .filter((i) => i < documents.length && !seen.has(i) && seen.add(i));
      // Documents the provider left out keep their lexical order after those it ranked.
      return [...ranked, ...documents.map((_, i) => i).filter((i) => !seen.has(i))];
    },
  };
}

/** `ranked` with its first `topN` in the provider's order; null when the provider failed. */
export async function rerank(reranker: Reranker, query: string, ranked: Scored[]): Promise<Scored[] | null> {
  const head = ranked.slice(0, reranker.topN);
  if (head.length < 2) return ranked;
  let order: number[];
  try {
    order = await reranker.order(query, head.map((s) => s.text));
  } catch {
    return null;
  }
  return [...order.map((i, position) => ({ ...head[i]!, score: head[position]!.score })), ...ranked.slice(head.length)];
}
