import type { Orm } from '../platform/db/orm.ts';
import type { ExtractionPool } from '../core/ingest/extraction/pool.ts';
import type { Logger } from '../platform/logger.ts';
import type { OpenAiDeriverConfig } from '../core/memory/openai-deriver.ts';
import type { Embedder } from '../core/retrieval/embeddings.ts';

export type ActivityDeps = {
  orm: Orm;
  logger: Logger;
  workerIdentity: string;
  /**
   * ocrCreditsPerPage: what live OCR charges per scanned page (OCR_CREDITS_PER_PAGE); shares: this
   * worker's ingest slots and INGEST_LARGE_BYTES (core/ingest/build/shares.ts).
   */
  ingest: { urlAllowlist: string[]; fetchTimeoutMs: number; ocrCreditsPerPage: number; shares: { slots: number; largeBytes: number } };
  /** Where builds extract: child processes with CPU and memory limits, never this event loop. */
  extraction: ExtractionPool;
  /** The model-backed claim deriver (MEMORY_DERIVER_*); absent = the built-in rules. */
  memoryDeriver?: OpenAiDeriverConfig | null;
  /** Makes the vectors of stored messages and excerpts (EMBEDDINGS_*); absent = none. */
  embedder?: Embedder | null;
};
