import { z } from 'zod';

/**
 * The optional semantic side of retrieval: an OpenAI-compatible embeddings provider
 * (`POST {EMBEDDINGS_BASE_URL}/embeddings`). The worker embeds messages when their event commits and
 * source excerpts when their source is built; the API embeds the question of an accuracy query. Vectors
 * are unit length (so a dot product is the cosine) and travel as float32 bytes, tagged with the model
 * that made them: a vector of another model is never compared.
 */

import type { EmbeddingsConfig } from '../../platform/config.ts';

export type Embedder = {
  model: string;
  /** One unit vector per text, in order; throws EmbeddingsUnavailable when the provider fails. */
  embed(texts: string[]): Promise<Float32Array[]>;
};

export class EmbeddingsUnavailable extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'EmbeddingsUnavailable';
  }
}

/** Longest text sent (characters): longer ones are cut, as providers refuse inputs past their token limit. */
export const MAX_EMBEDDED_CHARS = 8000;

const Response = z.object({
  data: z.array(z.object({ index: z.number().int().min(0), embedding: z.array(z.number()).min(1) })).min(1),
});

export function unit(v: ArrayLike<number>): Float32Array {
  const out = Float32Array.from(v);
  let norm = 0;
  for (let i = 0; i < out.length; i++) norm += out[i]! * out[i]!;
  norm = Math.sqrt(norm);
  if (norm > 0) for (let i = 0; i < out.length; i++) out[i]! /= norm;
  return out;
}

/** A vector as stored (bytea): its float32 values, little-endian. */
export const toBytes = (v: Float32Array) => Buffer.from(v.buffer, v.byteOffset, v.byteLength);
export function fromBytes(b: Buffer): Float32Array {
  const copy = new Float32Array(b.byteLength / 4);
  for (let i = 0; i < copy.length; i++) copy[i] = b.readFloatLE(i * 4);
  return copy;
}

export function createEmbedder(cfg: EmbeddingsConfig): Embedder {
  const url = `${cfg.baseUrl.replace(/\/$/, '')}/embeddings`;
  async function call(texts: string[]): Promise<Float32Array[]> {
    let res: globalThis.Response;
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...(cfg.apiKey ? { authorization: `Bearer ${cfg.apiKey}` } : {}) },
        body: JSON.stringify({ model: cfg.model, input: texts.map((t) => t.slice(0, MAX_EMBEDDED_CHARS)), ...(cfg.dimensions ? { dimensions: cfg.dimensions } : {}) }),
        signal: AbortSignal.timeout(cfg.timeoutMs),
      });
    } catch (err) {
      throw new EmbeddingsUnavailable(`the embeddings provider did not answer: ${(err as Error).name}`);
    }
    if (!res.ok) throw new EmbeddingsUnavailable(`the embeddings provider answered ${res.status}`);
    const parsed = Response.safeParse(await res.json().catch(() => null));
    if (!parsed.success) throw new EmbeddingsUnavailable('the embeddings provider answered something other than embeddings');
    const out: Float32Array[] = new Array(texts.length);
    for (const d of parsed.data.data) if (d.index < texts.length) out[d.index] = unit(d.embedding);
    const dims = out[0]?.length;
    if (out.some((v) => !v || v.length !== dims)) throw new EmbeddingsUnavailable('the embeddings provider left texts out or mixed dimensions');
    return out;
  }
  return {
    model: cfg.model,
    async embed(texts) {
      const out: Float32Array[] = [];
      for (let i = 0; i < texts.length; i += cfg.batchSize) out.push(...(await call(texts.slice(i, i + cfg.batchSize))));
      return out;
    },
  };
}

/** Who makes stored vectors (EMBEDDINGS_*; none: stored without) and where a failure is logged. */
export type StoredEmbedding = { embedder: Embedder | null; log: { warn(o: object, m: string): void } };
export const NO_EMBEDDING: StoredEmbedding = { embedder: null, log: { warn: () => {} } };

/**
 * Vectors for texts a worker is storing, or null: without a provider, or when it fails (a warning is
 * logged). Writes never wait on or fail for the provider: what is stored without a vector is found by
 * its words.
 */
export async function embedForStorage(embedder: Embedder | null | undefined, texts: string[], log: { warn(o: object, m: string): void }): Promise<Float32Array[] | null> {
  if (!embedder || texts.length === 0) return null;
  try {
    return await embedder.embed(texts);
  } catch (err) {
    log.warn({ err, texts: texts.length }, 'embeddings provider unavailable: stored without vectors');
    return null;
  }
}

/** Vectors as the hex of their float32 bytes, for a statement's text[] parameter decoded to bytea. */
export const toHex = (v: Float32Array | null | undefined) => (v ? toBytes(v).toString('hex') : null);
