import type { EntityManager } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { findJob, listJobsAfter, type Job } from './jobs.queries.ts';
import { notFound, validationError } from '../../platform/errors.ts';

/** The public shape of a job: no provider, ledger or internal details. */
export function publicJob(j: Job) {
  return {
    id: j.id,
    kind: j.kind,
    status: j.status,
    attempts: j.attempts,
    failure: j.failure ?? null,
    createdAt: j.createdAt.toISOString(),
    completedAt: j.completedAt?.toISOString() ?? null,
    startedAt: j.startedAt?.toISOString() ?? null,
    queuePosition: j.queuePosition,
    sourceUrl: j.sourceUrl ?? null,
    filename: j.filename ?? null,
    title: j.title ?? null,
    sourceId: j.kind === 'source_deletion' ? (j.sourceId ?? null) : null,
    records: j.recordCounts ?? null,
  };
}

// Opaque keyset cursor: the (createdAt, id) of the last job returned.
const encodeCursor = (j: Job) => Buffer.from(`${j.createdAt.toISOString()}|${j.id}`).toString('base64url');

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(at ?? '');
  if (!id || !/^[0-9a-f-]{36}$/.test(id) || Number.isNaN(createdAt.getTime())) {
    throw validationError('cursor is not valid; pass the nextCursor of a previous page.');
  }
  return { createdAt, id };
}

export async function listJobs(em: EntityManager, reach: Reach, page: { limit: number; cursor?: string }) {
  const after = page.cursor ? decodeCursor(page.cursor) : undefined;
  const jobs = await listJobsAfter(em, reach, after, page.limit + 1);
  const hasMore = jobs.length > page.limit;
  const pageJobs = jobs.slice(0, page.limit);
  return {
    jobs: pageJobs,
    pagination: {
      limit: page.limit,
      returned: pageJobs.length,
      hasMore,
      nextCursor: hasMore ? encodeCursor(pageJobs[pageJobs.length - 1]!) : null,
    },
  };
}

/** Another account's job, or one outside the key's audiences, is indistinguishable from a missing one. */
export async function getJob(em: EntityManager, reach: Reach, jobId: string): Promise<Job> {
  const job = await findJob(em, jobId, reach);
  if (!job) throw notFound('No ingest job with this id.');
  return job;
}
