import type { EntityManager } from '@mikro-orm/postgresql';
import { writeLongText } from '../../../platform/db/sql.ts';
import type { SupportedContentType } from '../extract/index.ts';
import type { ExtractionPool } from '../extraction/pool.ts';
import { addToLexicon } from '../prepare/lexicon.ts';
import type { RecordCounts } from '../prepare/prepare.ts';
import {
  activateQuarantined, builtJob, deleteBlob, deleteRecords, endBuiltJob, endFailedJob, endSucceededJob, insertRecords, loadJob,
  deleteOcrPages, releaseQuarantinedJob, sourceOfDeletion, storedFetch, storeFetched, tombstoneSource, upsertSource,
} from './build.queries.ts';
import { storedBytes } from '../jobs.queries.ts';
import { embedForStorage, NO_EMBEDDING, toHex, type StoredEmbedding } from '../../retrieval/embeddings.ts';
import { fetchSource } from '../fetch-source.ts';
import { storedPages } from '../ocr/pages.queries.ts';
import { parseSourceUrl, type UrlPolicy } from '../../../platform/net/url-safety.ts';

// The steps of an ingest job, called by the ingest workflow's activities. Each is idempotent: the
// fetched bytes are stored once per job, and records have deterministic ids and are replaced as a set
// in one transaction, so a retry or a crashed worker never leaves duplicates or half a source.

/** Makes sure the job's bytes are stored: uploads already are; URLs are fetched (safely) once. */
export async function acquireSource(
  em: EntityManager,
  jobId: string,
  opts: { policy: UrlPolicy; timeoutMs: number },
): Promise<{ crossSiteRedirect: boolean }> {
  const blob = await storedFetch(em, jobId);
  if (blob) return { crossSiteRedirect: blob.cross };
  const job = await loadJob(em, jobId);
  const fetched = await fetchSource(opts.policy, parseSourceUrl(job.source_url!), opts.timeoutMs);
  if (!fetched.supportedType) {
    throw new UnsupportedSourceError(`The URL serves ${fetched.contentType ?? 'an unknown content type'}, which is not supported.`);
  }
  await storeFetched(em, jobId, job.account_id, { bytes: fetched.bytes, contentType: fetched.supportedType, finalUrl: fetched.finalUrl });
  return { crossSiteRedirect: fetched.crossSiteRedirect };
}

export class UnsupportedSourceError extends Error {
  readonly publicMessage: string;
  constructor(message: string) {
    super(message);
    this.publicMessage = message;
  }
}

const RECORD_BATCH = 2000;

/** The build found scanned pages that have no recognised text yet: the workflow runs OCR on them, then builds again. */
export type NeedsOcrResult = { status: 'needs_ocr'; pages: number[] };

export type ProcessResult = {
  status: 'succeeded' | 'quarantined';
  quarantineReason: string | null;
  counts: RecordCounts;
  /** The document's content type (for the workflow's search attributes); null when reported from a stored result. */
  contentType?: string | null;
};

/**
 * Extracts the stored bytes (in an extraction process of `pool`), then replaces the source and its
 * records and ends the job, in one transaction.
 */
export async function buildSourceRecords(em: EntityManager, pool: ExtractionPool, build: {
  jobId: string;
  fetch: { crossSiteRedirect: boolean } | null;
  /** The activity attempt, recorded on the job by the first query. */
  attempt?: number;
  /** Makes the excerpts' vectors: best effort, stored with the records. */
  embedding?: StoredEmbedding;
}): Promise<ProcessResult | NeedsOcrResult> {
  const { jobId, fetch, attempt, embedding = NO_EMBEDDING } = build;
  const job = await loadJob(em, jobId, attempt);
  // A retry after the transaction below committed (the worker died before reporting): report what was stored.
  if (job.status === 'succeeded' || job.status === 'quarantined') return storedResult(em, jobId, job.status);
  // Read piece by piece as the extraction process asks: the worker never holds the whole document.
  const bytes = storedBytes(em, jobId, job.blob_size);
  // A stored blob always has its content type (not null in ingest_blob).
  const contentType = job.blob_content_type as SupportedContentType;
  const ocr = contentType === 'application/pdf' ? await storedPages(em, jobId) : [];
  const source = await pool.build(job.account_id, {
    jobId, source: bytes, contentType, sourceUrl: job.blob_final_url ?? job.source_url ?? undefined, crossSiteRedirect: fetch?.crossSiteRedirect ?? false, ocr,
  });
  if ('needsOcr' in source) return { status: 'needs_ocr', pages: source.needsOcr };
  const decision = source.quarantine;

  // Excerpts partition the text (facts and links repeat words of it): they carry the vectors.
  const excerpts = source.rows.filter((r) => r.kind === 'excerpt');
  const made = await embedForStorage(embedding.embedder, excerpts.map((r) => r.text), embedding.log);
  const vectors = made ? { model: embedding.embedder!.model, byRecord: new Map(excerpts.map((r, i) => [r.id, toHex(made[i])])) } : null;

  await addToLexicon(em, job.account_id, source.words);
  await em.transactional(async (tx) => {
    await upsertSource(tx, {
      id: jobId, accountId: job.account_id, kind: job.kind, url: job.blob_final_url ?? job.source_url, filename: job.filename, contentType,
      title: source.title, datedAt: job.dated_at, status: decision.quarantine ? 'quarantined' : 'active',
      quarantineReason: decision.quarantine ? decision.reason : null, contentHash: source.textHash, sections: source.sections, audience: job.audience,
    });
    await writeLongText(tx, { table: 'source', column: 'text', key: 'id', id: jobId }, source.text);
    await deleteRecords(tx, jobId);
    for (let i = 0; i < source.rows.length; i += RECORD_BATCH) {
      await insertRecords(tx, { accountId: job.account_id, sourceId: jobId, rows: source.rows.slice(i, i + RECORD_BATCH), vectors });
    }
    // The job ends in the same transaction as its records: no window where records exist for a queued job.
    await endBuiltJob(tx, jobId, {
      title: source.title, counts: source.counts, quarantineReason: decision.quarantine ? decision.reason : null,
      status: decision.quarantine ? 'quarantined' : 'succeeded',
    });
    await deleteBlob(tx, jobId);
    if (ocr.length > 0) await deleteOcrPages(tx, jobId);
  });
  return {
    status: decision.quarantine ? 'quarantined' : 'succeeded',
    quarantineReason: decision.quarantine ? decision.reason : null,
    counts: source.counts,
    contentType,
  };
}

async function storedResult(em: EntityManager, jobId: string, status: 'succeeded' | 'quarantined'): Promise<ProcessResult> {
  const row = await builtJob(em, jobId);
  const counts = row?.record_counts ?? { sourceExcerpts: 0, facts: 0, links: 0, total: 0 };
  return { status, quarantineReason: row?.quarantine_reason ?? null, counts };
}

export async function failJob(em: EntityManager, jobId: string, failure: { message: string; retryable: boolean }): Promise<void> {
  await endFailedJob(em, jobId, { ...failure, failedAt: new Date().toISOString() });
}

// Source deletion ----------------------------------------------------------------------------------

/** Removes a source's records and text; the row stays as a tombstone with status deleted. */
export async function deleteSourceRecords(em: EntityManager, deletionJobId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const sourceId = await sourceOfDeletion(tx, deletionJobId);
    if (!sourceId) throw new Error(`deletion job ${deletionJobId} does not exist`);
    await deleteRecords(tx, sourceId);
    await tombstoneSource(tx, sourceId);
    await deleteBlob(tx, sourceId);
  });
}

export async function completeDeletionJob(em: EntityManager, jobId: string): Promise<void> {
  await endSucceededJob(em, jobId);
}

/** Operator release of a quarantined source: it becomes usable for answers. */
export async function releaseSource(em: EntityManager, sourceId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    if (!(await activateQuarantined(tx, sourceId))) return false;
    await releaseQuarantinedJob(tx, sourceId);
    return true;
  });
}
