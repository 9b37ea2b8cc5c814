import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, readLongBytes, writeLongText } from '../db/sql.ts';

import { sha256Hex } from '../hash.ts';
import type { SupportedContentType } from './extract/index.ts';
import type { ExtractionPool } from './extraction-pool.ts';
import { addToLexicon } from './lexicon.ts';
import type { RecordCounts, RecordRow } from './prepare.ts';
import { embedForStorage, toHex, type Embedder } from '../retrieval/embeddings.ts';
import { recordTermRows } from '../retrieval/terms.ts';
import { fetchSource } from './fetch-source.ts';
import { parseSourceUrl, type UrlPolicy } from './url-safety.ts';

// The steps of an ingest job, called by the ingest workflow's activities. Each is idempotent: the
// fetched bytes are stored once per job, and records have deterministic ids and are replaced as a set
// in one transaction, so a retry or a crashed worker never leaves duplicates or half a source.

type JobRow = {
  id: string; account_id: string; kind: 'url' | 'file'; status: string; source_url: string | null;
  filename: string | null; content_type: string | null; dated_at: string | null; audience: string | null;
  /** The stored bytes' content type, final URL and size; null when nothing is stored (yet). */
  blob_content_type: string | null; blob_final_url: string | null; blob_size: number | null;
};

const JOB_COLUMNS = `j.id, j.account_id, j.kind, j.status, j.source_url, j.filename, j.content_type,
  to_char(j.dated_at, 'YYYY-MM-DD') as dated_at, j.audience, b.content_type as blob_content_type, b.final_url as blob_final_url,
  octet_length(b.bytes) as blob_size`;

/**
 * The job and what is stored for it, in one round trip. With `attempt` (the activity's attempt number)
 * it also records the attempt on the job, in the same statement.
 */
async function loadJob(em: EntityManager, jobId: string, attempt?: number): Promise<JobRow> {
  const [job] = attempt === undefined
    ? await bound<JobRow>(em, `select ${JOB_COLUMNS} from ingest_job j left join ingest_blob b on b.job_id = j.id where j.id = ?`, [jobId])
    : await bound<JobRow>(
      em,
      `with touched as (update ingest_job set attempts = greatest(attempts, ?), updated_at = now() where id = ? returning *)
       select ${JOB_COLUMNS} from touched j left join ingest_blob b on b.job_id = j.id`,
      [attempt, jobId],
    );
  if (!job) throw new Error(`ingest job ${jobId} does not exist`);
  return job;
}

export async function recordAttempt(em: EntityManager, jobId: string, attempt: number): Promise<void> {
  await bound(em, 'update ingest_job set attempts = greatest(attempts, ?), updated_at = now() where id = ?', [attempt, jobId]);
}

/** Makes sure the job's bytes are stored: uploads already are; URLs are fetched (safely) once. */
export async function acquireSource(
  em: EntityManager,
  jobId: string,
  opts: { policy: UrlPolicy; timeoutMs: number },
): Promise<{ crossSiteRedirect: boolean }> {
  const [blob] = await bound<{ final_url: string | null; cross: boolean }>(
    em,
    `select b.final_url, (b.final_url is not null and b.final_url <> j.source_url and
            split_part(split_part(b.final_url, '://', 2), '/', 1) <> split_part(split_part(j.source_url, '://', 2), '/', 1)) as cross
       from ingest_blob b join ingest_job j on j.id = b.job_id where b.job_id = ?`,
    [jobId],
  );
  if (blob) return { crossSiteRedirect: blob.cross };
  const job = await loadJob(em, jobId);
  const fetched = await fetchSource(opts.policy, parseSourceUrl(job.source_url!), opts.timeoutMs);
  if (!fetched.supportedType) {
    throw new UnsupportedSourceError(`The URL serves ${fetched.contentType ?? 'an unknown content type'}, which is not supported.`);
  }
  await bound(
    em,
    `insert into ingest_blob (job_id, account_id, bytes, sha256, size_bytes, content_type, final_url)
     values (?, ?, ?, ?, ?, ?, ?) on conflict (job_id) do nothing`,
    [jobId, job.account_id, fetched.bytes, sha256Hex(fetched.bytes),
      fetched.bytes.byteLength, fetched.supportedType, fetched.finalUrl],
  );
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
export async function buildSourceRecords(
  em: EntityManager,
  pool: ExtractionPool,
  jobId: string,
  fetch: { crossSiteRedirect: boolean } | null,
  /** The activity attempt, recorded on the job by the first query. */
  attempt?: number,
  /** Makes the excerpts' vectors (EMBEDDINGS_*): best effort, stored with the records. */
  embedding: { embedder: Embedder | null; log: { warn(o: object, m: string): void } } = { embedder: null, log: { warn: () => {} } },
): Promise<ProcessResult> {
  const job = await loadJob(em, jobId, attempt);
  // A retry after the transaction below committed (the worker died before reporting): report what was stored.
  if (job.status === 'succeeded' || job.status === 'quarantined') return storedResult(em, jobId, job.status);
  const blob = job.blob_content_type === null ? null : { content_type: job.blob_content_type, final_url: job.blob_final_url };
  const bytes = blob && (await readLongBytes(em, 'ingest_blob', 'bytes', 'job_id', jobId, job.blob_size));
  if (!blob || !bytes) throw new Error(`ingest job ${jobId} has no stored bytes`);
  const contentType = blob.content_type as SupportedContentType;
  const source = await pool.build(job.account_id, {
    jobId, bytes, contentType, sourceUrl: blob.final_url ?? job.source_url ?? undefined, crossSiteRedirect: fetch?.crossSiteRedirect ?? false,
  });
  const decision = source.quarantine;

  // Excerpts partition the text (facts and links repeat words of it): they carry the vectors.
  const excerpts = source.rows.filter((r) => r.kind === 'excerpt');
  const made = await embedForStorage(embedding.embedder, excerpts.map((r) => r.text), embedding.log);
  const vectors = made ? { model: embedding.embedder!.model, byRecord: new Map(excerpts.map((r, i) => [r.id, toHex(made[i])])) } : null;

  await addToLexicon(em, job.account_id, source.words);
  await em.transactional(async (tx) => {
    await bound(
      tx,
      `insert into source (id, account_id, kind, url, filename, content_type, title, dated_at, status, quarantine_reason,
         content_hash, text, sections, audience)
       values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?::jsonb, ?)
       on conflict (id) do update set title = excluded.title, status = excluded.status,
         quarantine_reason = excluded.quarantine_reason, content_hash = excluded.content_hash,
         text = excluded.text, sections = excluded.sections, url = excluded.url, record_count = 0, record_length = 0`,
      [jobId, job.account_id, job.kind, blob.final_url ?? job.source_url, job.filename, contentType, source.title, job.dated_at,
        decision.quarantine ? 'quarantined' : 'active', decision.quarantine ? decision.reason : null,
        source.textHash, JSON.stringify(source.sections), job.audience],
    );
    await writeLongText(tx, 'source', 'text', jobId, source.text);
    await deleteRecords(tx, jobId);
    for (let i = 0; i < source.rows.length; i += RECORD_BATCH) {
      await insertRecords(tx, job.account_id, jobId, source.rows.slice(i, i + RECORD_BATCH), vectors);
    }
    // The job ends in the same transaction as its records: no window where records exist for a queued job.
    await bound(
      tx,
      `update ingest_job set title = ?, record_counts = ?::jsonb, quarantine_reason = ?, status = ?,
         completed_at = coalesce(completed_at, now()), updated_at = now()
       where id = ? and status = 'queued'`,
      [source.title, JSON.stringify(source.counts), decision.quarantine ? decision.reason : null,
        decision.quarantine ? 'quarantined' : 'succeeded', jobId],
    );
    await bound(tx, 'delete from ingest_blob where job_id = ?', [jobId]);
  });
  return {
    status: decision.quarantine ? 'quarantined' : 'succeeded',
    quarantineReason: decision.quarantine ? decision.reason : null,
    counts: source.counts,
    contentType,
  };
}

/**
 * One multi-row INSERT per batch (few round trips, bounded memory), each column a typed array expanded
 * by unnest: PostgreSQL parses these in under half the CPU of the same rows as one JSON document, and
 * the database is the busier side while ingesting. Section paths (ragged, and shared by many records)
 * travel once each, as JSON, and rows refer to them by index. The same statement adds the batch's rows
 * of the retrieval impact index (record_term, shared/retrieval/terms.ts) from the stored tsvectors, and
 * the batch's count and length to its source's totals (retrieval's statistics; docs/schema.sql).
 */
async function insertRecords(
  tx: EntityManager, accountId: string, sourceId: string, rows: RecordRow[], vectors: { model: string; byRecord: Map<string, string | null> } | null,
): Promise<void> {
  const paths: string[][] = [];
  const pathIndex = new Map<string, number>();
  const col = <K extends keyof RecordRow>(k: K) => rows.map((r) => r[k]);
  const pathRefs = rows.map((r) => {
    const key = JSON.stringify(r.section_path);
    let n = pathIndex.get(key);
    if (n === undefined) {
      n = paths.push(r.section_path) - 1;
      pathIndex.set(key, n);
    }
    return n;
  });
  await bound(
    tx,
    `with path as (
       select (p.n - 1)::int as n, array(select jsonb_array_elements_text(p.path)) as path
         from jsonb_array_elements(?::jsonb) with ordinality as p(path, n))
     , added as (
       insert into record (id, account_id, source_id, kind, text, start_offset, end_offset, section_path, page, subject,
         link_type, link_from, link_to, content_hash, embedding, embedding_model)
       select r.id, ?, ?, r.kind, r.text, r.start_offset, r.end_offset, path.path, r.page, r.subject, r.link_type, r.link_from,
              r.link_to, r.content_hash, decode(r.vector, 'hex'), case when r.vector is null then null else ? end
         from unnest(?::uuid[], ?::text[], ?::text[], ?::int[], ?::int[], ?::int[], ?::int[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[])
                as r(id, kind, text, start_offset, end_offset, path_n, page, subject, link_type, link_from, link_to, content_hash, vector)
         join path on path.n = r.path_n
       returning id, account_id, source_id, tsv, 0 as batch)
     , counted as (
       update source set record_count = record_count + (select count(*) from added),
              record_length = record_length + (select coalesce(sum(cairn_tsv_length(tsv)), 0) from added)
        where id = ?)
     insert into record_term (account_id, source_id, lexeme, record_ids, impacts) ${recordTermRows('added')}`,
    [JSON.stringify(paths), accountId, sourceId, vectors?.model ?? null, col('id'), col('kind'), col('text'), col('start_offset'), col('end_offset'), pathRefs,
      col('page'), col('subject'), col('link_type'), col('link_from'), col('link_to'), col('content_hash'),
      rows.map((r) => vectors?.byRecord.get(r.id) ?? null), sourceId],
  );
}

/** A source's records and their rows of the impact index. */
async function deleteRecords(tx: EntityManager, sourceId: string): Promise<void> {
  await bound(tx, 'with terms as (delete from record_term where source_id = ?) delete from record where source_id = ?', [sourceId, sourceId]);
}

async function storedResult(em: EntityManager, jobId: string, status: 'succeeded' | 'quarantined'): Promise<ProcessResult> {
  const [row] = await bound<{ record_counts: ProcessResult['counts'] | null; quarantine_reason: string | null }>(
    em, 'select record_counts, quarantine_reason from ingest_job where id = ?', [jobId],
  );
  const counts = row?.record_counts ?? { sourceExcerpts: 0, facts: 0, links: 0, total: 0 };
  return { status, quarantineReason: row?.quarantine_reason ?? null, counts };
}

export async function failJob(em: EntityManager, jobId: string, failure: { message: string; retryable: boolean }): Promise<void> {
  await bound(
    em,
    `update ingest_job set status = 'failed', failure = ?::jsonb, completed_at = coalesce(completed_at, now()), updated_at = now()
      where id = ? and status = 'queued'`,
    [JSON.stringify({ ...failure, failedAt: new Date().toISOString() }), jobId],
  );
}

// Source deletion ----------------------------------------------------------------------------------

/** Removes a source's records and text; the row stays as a tombstone with status deleted. */
export async function deleteSourceRecords(em: EntityManager, deletionJobId: string): Promise<void> {
  await em.transactional(async (tx) => {
    const [job] = await bound<{ source_id: string }>(tx, 'select source_id from ingest_job where id = ?', [deletionJobId]);
    if (!job) throw new Error(`deletion job ${deletionJobId} does not exist`);
    await deleteRecords(tx, job.source_id);
    await bound(tx, `update source set status = 'deleted', deleted_at = coalesce(deleted_at, now()), text = '', sections = '[]' where id = ?`, [job.source_id]);
    await bound(tx, 'delete from ingest_blob where job_id = ?', [job.source_id]);
  });
}

export async function completeDeletionJob(em: EntityManager, jobId: string): Promise<void> {
  await bound(
    em,
    `update ingest_job set status = 'succeeded', completed_at = coalesce(completed_at, now()), updated_at = now() where id = ? and status = 'queued'`,
    [jobId],
  );
}

/** Operator release of a quarantined source: it becomes usable for answers. */
export async function releaseSource(em: EntityManager, sourceId: string): Promise<boolean> {
  return em.transactional(async (tx) => {
    const rows = await bound(tx, `update source set status = 'active' where id = ? and status = 'quarantined' returning id`, [sourceId]);
    if (rows.length === 0) return false;
    await bound(tx, `update ingest_job set status = 'succeeded', updated_at = now() where id = ? and status = 'quarantined'`, [sourceId]);
    return true;
  });
}
