import type { EntityManager } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { bound, inAudiences, longBytesReader, sql } from '../../platform/db/sql.ts';
import type { ByteSource } from './extraction/parts.ts';

// The ingest_job aggregate's statements as the API sees a job: submission, reading, listing and
// source deletion requests. The build's own steps on a job live with the build (build.ts).

export type JobKind = 'url' | 'file' | 'source_deletion';
export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'quarantined';
export type JobFailure = { message: string; retryable: boolean; failedAt: string };

export type Job = {
  id: string; accountId: string; kind: JobKind; status: JobStatus; attempts: number; failure: JobFailure | null;
  createdAt: Date; completedAt: Date | null; sourceUrl: string | null; filename: string | null; title: string | null;
  sourceId: string | null; recordCounts: { sourceExcerpts: number; facts: number; links: number; total: number } | null;
  audience: string | null;
  /** When processing first began (null: still waiting); queuePosition: its place in the account's line while it waits. */
  startedAt: Date | null; queuePosition: number | null;
};

/** Rows come with timestamps as text (the ORM's pool keeps them so); a Job has Dates. */
const toJob = (r: Job): Job => ({
  ...r, createdAt: new Date(r.createdAt), completedAt: r.completedAt === null ? null : new Date(r.completedAt),
  startedAt: r.startedAt === null ? null : new Date(r.startedAt), queuePosition: r.queuePosition === null ? null : Number(r.queuePosition),
});

const JOB = sql.raw(`id, account_id as "accountId", kind, status, attempts, failure, created_at as "createdAt",
  completed_at as "completedAt", source_url as "sourceUrl", filename, title, source_id as "sourceId",
  record_counts as "recordCounts", audience, started_at as "startedAt",
  case when status = 'queued' and started_at is null and kind <> 'source_deletion' then 1 + (select count(*) from ingest_job w
    where w.account_id = ingest_job.account_id and w.status = 'queued' and w.started_at is null and w.kind <> 'source_deletion'
      and (w.created_at, w.id) < (ingest_job.created_at, ingest_job.id)) end as "queuePosition"`);

/** A job by id; with `reach`, only one of that account inside its audiences. */
export async function findJob(em: EntityManager, jobId: string, reach?: Reach): Promise<Job | null> {
  const [job] = await bound<Job>(em, sql`select ${JOB} from ingest_job where id = ${jobId}${
    reach ? sql` and account_id = ${reach.accountId}${inAudiences('audience', reach.audiences)}` : sql.empty}`);
  return job ? toJob(job) : null;
}

/** The account's jobs within reach, newest first, after the (createdAt, id) of a previous page's last job. */
export async function listJobsAfter(em: EntityManager, reach: Reach, after: { createdAt: Date; id: string } | undefined, limit: number): Promise<Job[]> {
  const rows = await bound<Job>(em, sql`select ${JOB} from ingest_job where account_id = ${reach.accountId}${inAudiences('audience', reach.audiences)}
    ${after ? sql`and (created_at < ${after.createdAt} or (created_at = ${after.createdAt} and id < ${after.id}))` : sql.empty}
    order by created_at desc, id desc limit ${limit}`);
  return rows.map(toJob);
}

/** What an idempotency key of the account already made, if anything. */
export async function jobOfKey(tx: EntityManager, accountId: string, idempotencyKey: string) {
  const [row] = await bound<{ id: string; request_hash: string; audience: string | null }>(tx,
    sql`select id, request_hash, audience from ingest_job where account_id = ${accountId} and idempotency_key = ${idempotencyKey}`);
  return row;
}

/** A new queued url or file job, with the uploaded bytes when there are any. */
export async function insertSubmission(
  tx: EntityManager,
  job: {
    id: string; accountId: string; kind: 'url' | 'file'; idempotencyKey: string; requestHash: string; datedAt: string;
    sourceUrl?: string; filename?: string; contentType?: string; audience: string | null; blob?: { bytes: Buffer; sha256: string; contentType: string };
  },
): Promise<void> {
  await bound(tx, sql`insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, attempts, source_url, filename,
      content_type, dated_at, size_bytes, audience)
    values (${job.id}, ${job.accountId}, ${job.kind}, 'queued', ${job.idempotencyKey}, ${job.requestHash}, 0, ${job.sourceUrl ?? null},
      ${job.filename ?? null}, ${job.contentType ?? null}, ${job.datedAt}, ${job.blob?.bytes.byteLength ?? null}, ${job.audience})`);
  if (job.blob) {
    const { bytes, sha256, contentType } = job.blob;
    await bound(tx, sql`insert into ingest_blob (job_id, account_id, bytes, sha256, size_bytes, content_type)
      values (${job.id}, ${job.accountId}, ${bytes}, ${sha256}, ${bytes.byteLength}, ${contentType})`);
  }
}

/** The deletion job of a source that is queued, running or done (not failed), newest first. */
export async function liveDeletionJob(tx: EntityManager, accountId: string, sourceId: string): Promise<string | null> {
  const [row] = await bound<{ id: string }>(tx, sql`select id from ingest_job
    where account_id = ${accountId} and kind = 'source_deletion' and source_id = ${sourceId} and status <> 'failed'
    order by created_at desc limit 1`);
  return row?.id ?? null;
}

export async function insertDeletionJob(tx: EntityManager, job: { id: string; accountId: string; sourceId: string; audience: string | null }): Promise<void> {
  await bound(tx, sql`insert into ingest_job (id, account_id, kind, status, source_id, attempts, audience)
    values (${job.id}, ${job.accountId}, 'source_deletion', 'queued', ${job.sourceId}, 0, ${job.audience})`);
}

/** The account's most recent jobs (the overview). */
export async function recentJobs(em: EntityManager, accountId: string, limit: number): Promise<Job[]> {
  const rows = await bound<Job>(em, sql`select ${JOB} from ingest_job where account_id = ${accountId} order by created_at desc, id desc limit ${limit}`);
  return rows.map(toJob);
}

/**
 * A job's stored bytes as a source read piece by piece (`size` as read with the job: its octet_length,
 * null when nothing is stored, which is an error here).
 */
export function storedBytes(em: EntityManager, jobId: string, size: number | null): ByteSource {
  if (size === null) throw new Error(`ingest job ${jobId} has no stored bytes`);
  return { size: Number(size), read: longBytesReader(em, { table: 'ingest_blob', column: 'bytes', key: 'job_id', id: jobId }) };
}
