import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../../platform/db/sql.ts';
import { sha256Hex } from '../../../platform/hash.ts';
import { recordTermRows } from '../../retrieval/terms.queries.ts';
import type { JobFailure } from '../jobs.queries.ts';
import type { RecordCounts, RecordRow } from '../prepare/prepare.ts';

// The build's statements on its job, its stored bytes, its source and the source's records (ingest_job,
// ingest_blob, source, record, record_term); the steps and their order are in build.ts.

export type JobRow = {
  id: string; account_id: string; kind: 'url' | 'file'; status: string; source_url: string | null;
  filename: string | null; content_type: string | null; dated_at: string | null; audience: string | null;
  /** The stored bytes' content type, final URL and size; null when nothing is stored (yet). */
  blob_content_type: string | null; blob_final_url: string | null; blob_size: number | null;
};

const JOB_COLUMNS = sql.raw(`j.id, j.account_id, j.kind, j.status, j.source_url, j.filename, j.content_type,
  to_char(j.dated_at, 'YYYY-MM-DD') as dated_at, j.audience, b.content_type as blob_content_type, b.final_url as blob_final_url,
  octet_length(b.bytes) as blob_size`);

/**
 * The job and what is stored for it, in one round trip. With `attempt` (the activity's attempt number)
 * it also records the attempt on the job, in the same statement.
 */
export async function loadJob(em: EntityManager, jobId: string, attempt?: number): Promise<JobRow> {
  const [job] = attempt === undefined
    ? await bound<JobRow>(em, sql`select ${JOB_COLUMNS} from ingest_job j left join ingest_blob b on b.job_id = j.id where j.id = ${jobId}`)
    : await bound<JobRow>(em, sql`with touched as (update ingest_job set attempts = greatest(attempts, ${attempt}),
                                                 started_at = coalesce(started_at, now()), updated_at = now() where id = ${jobId} returning *)
       select ${JOB_COLUMNS} from touched j left join ingest_blob b on b.job_id = j.id`);
  if (!job) throw new Error(`ingest job ${jobId} does not exist`);
  return job;
}

/** What a job's turn depends on (shares.ts): its account and the size of its stored bytes (0: none yet). */
export async function jobShape(em: EntityManager, jobId: string): Promise<{ accountId: string; sizeBytes: number }> {
  const [row] = await bound<{ account_id: string; size: string | null }>(em,
    sql`select j.account_id, b.size_bytes as size from ingest_job j left join ingest_blob b on b.job_id = j.id where j.id = ${jobId}`);
  if (!row) throw new Error(`ingest job ${jobId} does not exist`);
  return { accountId: row.account_id, sizeBytes: Number(row.size ?? 0) };
}

export async function recordAttempt(em: EntityManager, jobId: string, attempt: number): Promise<void> {
  await bound(em, sql`update ingest_job set attempts = greatest(attempts, ${attempt}), started_at = coalesce(started_at, now()), updated_at = now()
    where id = ${jobId}`);
}

/** The stored fetch of a URL job: its final URL and whether it redirected to another site; none yet = undefined. */
export async function storedFetch(em: EntityManager, jobId: string) {
  const [blob] = await bound<{ final_url: string | null; cross: boolean }>(em, sql`select b.final_url,
      (b.final_url is not null and b.final_url <> j.source_url and
       split_part(split_part(b.final_url, '://', 2), '/', 1) <> split_part(split_part(j.source_url, '://', 2), '/', 1)) as cross
    from ingest_blob b join ingest_job j on j.id = b.job_id where b.job_id = ${jobId}`);
  return blob;
}

/** Stores a URL job's fetched bytes once (a retry's second fetch is dropped). */
export async function storeFetched(em: EntityManager, jobId: string, accountId: string, fetched: { bytes: Buffer; contentType: string; finalUrl: string }): Promise<void> {
  await bound(em, sql`insert into ingest_blob (job_id, account_id, bytes, sha256, size_bytes, content_type, final_url)
    values (${jobId}, ${accountId}, ${fetched.bytes}, ${sha256Hex(fetched.bytes)}, ${fetched.bytes.byteLength}, ${fetched.contentType}, ${fetched.finalUrl})
    on conflict (job_id) do nothing`);
}

/** The recognised text of a built job's pages (it does not outlive its use). */
export async function deleteOcrPages(tx: EntityManager, jobId: string): Promise<void> {
  await bound(tx, sql`delete from ocr_page where owner_id = ${jobId}`);
}

export async function deleteBlob(tx: EntityManager, jobId: string): Promise<void> {
  await bound(tx, sql`delete from ingest_blob where job_id = ${jobId}`);
}

/** The source row of a build (its id is the job's), with empty text (written in pieces after) and zero totals. */
export async function upsertSource(tx: EntityManager, s: {
  id: string; accountId: string; kind: string; url: string | null; filename: string | null; contentType: string; title: string | null;
  datedAt: string | null; status: 'active' | 'quarantined'; quarantineReason: string | null; contentHash: string; sections: unknown; audience: string | null;
}): Promise<void> {
  await bound(tx, sql`insert into source (id, account_id, kind, url, filename, content_type, title, dated_at, status, quarantine_reason,
      content_hash, text, sections, audience)
    values (${s.id}, ${s.accountId}, ${s.kind}, ${s.url}, ${s.filename}, ${s.contentType}, ${s.title}, ${s.datedAt}, ${s.status},
      ${s.quarantineReason}, ${s.contentHash}, '', ${JSON.stringify(s.sections)}::jsonb, ${s.audience})
    on conflict (id) do update set title = excluded.title, status = excluded.status,
      quarantine_reason = excluded.quarantine_reason, content_hash = excluded.content_hash,
      text = excluded.text, sections = excluded.sections, url = excluded.url, record_count = 0, record_length = 0`);
}

/**
 * One multi-row INSERT per batch (few round trips, bounded memory), each column a typed array expanded
 * by unnest: PostgreSQL parses these in under half the CPU of the same rows as one JSON document, and
 * the database is the busier side while ingesting. Section paths (ragged, and shared by many records)
 * travel once each, as JSON, and rows refer to them by index. The same statement adds the batch's rows
 * of the retrieval impact index (record_term, core/retrieval/terms.queries.ts) from the stored tsvectors, and
 * the batch's count and length to its source's totals (retrieval's statistics; docs/schema.sql).
 */
export async function insertRecords(tx: EntityManager, batch: {
  accountId: string; sourceId: string; rows: RecordRow[]; vectors: { model: string; byRecord: Map<string, string | null> } | null;
}): Promise<void> {
  const { accountId, sourceId, rows, vectors } = batch;
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
  await bound(tx, sql`with path as (
       select (p.n - 1)::int as n, array(select jsonb_array_elements_text(p.path)) as path
         from jsonb_array_elements(${JSON.stringify(paths)}::jsonb) with ordinality as p(path, n))
     , added as (
       insert into record (id, account_id, source_id, kind, text, start_offset, end_offset, section_path, page, subject,
         link_type, link_from, link_to, content_hash, embedding, embedding_model)
       select r.id, ${accountId}, ${sourceId}, r.kind, r.text, r.start_offset, r.end_offset, path.path, r.page, r.subject, r.link_type, r.link_from,
              r.link_to, r.content_hash, decode(r.vector, 'hex'), case when r.vector is null then null else ${vectors?.model ?? null} end
         from unnest(${col('id')}::uuid[], ${col('kind')}::text[], ${col('text')}::text[], ${col('start_offset')}::int[], ${col('end_offset')}::int[],
                     ${pathRefs}::int[], ${col('page')}::int[], ${col('subject')}::text[], ${col('link_type')}::text[], ${col('link_from')}::text[],
                     ${col('link_to')}::text[], ${col('content_hash')}::text[], ${rows.map((r) => vectors?.byRecord.get(r.id) ?? null)}::text[])
                as r(id, kind, text, start_offset, end_offset, path_n, page, subject, link_type, link_from, link_to, content_hash, vector)
         join path on path.n = r.path_n
       returning id, account_id, source_id, tsv, 0 as batch)
     , counted as (
       update source set record_count = record_count + (select count(*) from added),
              record_length = record_length + (select coalesce(sum(cairn_tsv_length(tsv)), 0) from added)
        where id = ${sourceId})
     insert into record_term (account_id, source_id, lexeme, record_ids, impacts) ${recordTermRows(sql.raw('added'))}`);
}

/** A source's records and their rows of the impact index. */
export async function deleteRecords(tx: EntityManager, sourceId: string): Promise<void> {
  await bound(tx, sql`with terms as (delete from record_term where source_id = ${sourceId}) delete from record where source_id = ${sourceId}`);
}

/** Ends a queued job built: its title, counts and final status. */
export async function endBuiltJob(tx: EntityManager, jobId: string, end: { title: string | null; counts: RecordCounts; quarantineReason: string | null; status: 'succeeded' | 'quarantined' }): Promise<void> {
  await bound(tx, sql`update ingest_job set title = ${end.title}, record_counts = ${JSON.stringify(end.counts)}::jsonb,
      quarantine_reason = ${end.quarantineReason}, status = ${end.status}, completed_at = coalesce(completed_at, now()), updated_at = now()
    where id = ${jobId} and status = 'queued'`);
}

/** What a finished build stored on its job (a retry reports it). */
export async function builtJob(em: EntityManager, jobId: string) {
  const [row] = await bound<{ record_counts: RecordCounts | null; quarantine_reason: string | null }>(em,
    sql`select record_counts, quarantine_reason from ingest_job where id = ${jobId}`);
  return row;
}

/** Ends a queued job failed; the recognised text of its pages goes with it. */
export async function endFailedJob(em: EntityManager, jobId: string, failure: JobFailure): Promise<void> {
  await bound(em, sql`with ocr as (delete from ocr_page where owner_id = ${jobId})
    update ingest_job set status = 'failed', failure = ${JSON.stringify(failure)}::jsonb,
      completed_at = coalesce(completed_at, now()), updated_at = now()
    where id = ${jobId} and status = 'queued'`);
}

export async function endSucceededJob(em: EntityManager, jobId: string): Promise<void> {
  await bound(em, sql`update ingest_job set status = 'succeeded', completed_at = coalesce(completed_at, now()), updated_at = now()
    where id = ${jobId} and status = 'queued'`);
}

/** The source a deletion job deletes; null when the job does not exist. */
export async function sourceOfDeletion(tx: EntityManager, deletionJobId: string): Promise<string | null> {
  const [job] = await bound<{ source_id: string }>(tx, sql`select source_id from ingest_job where id = ${deletionJobId}`);
  return job?.source_id ?? null;
}

/** The source's row stays as a tombstone: status deleted, no text. */
export async function tombstoneSource(tx: EntityManager, sourceId: string): Promise<void> {
  await bound(tx, sql`update source set status = 'deleted', deleted_at = coalesce(deleted_at, now()), text = '', sections = '[]' where id = ${sourceId}`);
}

/** A quarantined source becomes active; false when it was not quarantined. */
export async function activateQuarantined(tx: EntityManager, sourceId: string): Promise<boolean> {
  return (await bound(tx, sql`update source set status = 'active' where id = ${sourceId} and status = 'quarantined' returning id`)).length > 0;
}

/** The job of a released source counts as succeeded. */
export async function releaseQuarantinedJob(tx: EntityManager, sourceId: string): Promise<void> {
  await bound(tx, sql`update ingest_job set status = 'succeeded', updated_at = now() where id = ${sourceId} and status = 'quarantined'`);
}
