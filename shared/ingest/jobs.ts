import type { EntityManager } from '@mikro-orm/postgresql';
import { IngestJob } from '../db/entities/index.ts';
import { notFound, validationError } from '../errors.ts';

/** The public shape of a job: no provider, ledger or internal details. */
export function publicJob(j: IngestJob) {
  return {
    id: j.id,
    kind: j.kind,
    status: j.status,
    attempts: j.attempts,
    failure: j.failure ?? null,
    createdAt: j.createdAt.toISOString(),
    completedAt: j.completedAt?.toISOString() ?? null,
    sourceUrl: j.sourceUrl ?? null,
    filename: j.filename ?? null,
    title: j.title ?? null,
    sourceId: j.kind === 'source_deletion' ? (j.sourceId ?? null) : null,
    records: j.recordCounts ?? null,
  };
}

// Opaque keyset cursor: the (createdAt, id) of the last job returned.
const encodeCursor = (j: IngestJob) => Buffer.from(`${j.createdAt.toISOString()}|${j.id}`).toString('base64url');

function decodeCursor(cursor: string): { createdAt: Date; id: string } {
  const [at, id] = Buffer.from(cursor, 'base64url').toString('utf8').split('|');
  const createdAt = new Date(at ?? '');
  if (!id || !/^[0-9a-f-]{36}$/.test(id) || Number.isNaN(createdAt.getTime())) {
    throw validationError('cursor is not valid; pass the nextCursor of a previous page.');
  }
  return { createdAt, id };
}

export async function listJobs(em: EntityManager, accountId: string, page: { limit: number; cursor?: string }) {
  const after = page.cursor ? decodeCursor(page.cursor) : undefined;
  const jobs = await em.find(
    IngestJob,
    after
      ? {
          accountId,
          $or: [{ createdAt: { $lt: after.createdAt } }, { createdAt: after.createdAt, id: { $lt: after.id } }],
        }
      : { accountId },
    { orderBy: [{ createdAt: 'desc' }, { id: 'desc' }], limit: page.limit + 1 },
  );
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

/** Another account's job is indistinguishable from a missing one. */
export async function getJob(em: EntityManager, accountId: string, jobId: string): Promise<IngestJob> {
  const job = await em.findOne(IngestJob, { id: jobId, accountId });
  if (!job) throw notFound('No ingest job with this id.');
  return job;
}
