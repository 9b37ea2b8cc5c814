import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { notFound } from '../../platform/errors.ts';
import { publicJob } from './jobs.ts';
import { findJob, insertDeletionJob, liveDeletionJob, recentJobs, type Job } from './jobs.queries.ts';
import { activeRecordTotal, activeSources, lockSourceInReach } from './sources.queries.ts';

/**
 * Starts the deletion of a source (its id is the id of the ingest job that created it). A second
 * request while a deletion is queued or done returns that job instead of making another. A source
 * outside an audience-limited key's audiences is not found; the deletion job carries the source's
 * audience, so only the keys that reach the source see it.
 */
export async function requestSourceDeletion(
  em: EntityManager,
  /** Starts (or joins) the deletion job's workflow (temporal/starts.ts). */
  startDeletion: (job: { id: string; accountId: string }) => Promise<unknown>,
  reach: Reach,
  sourceId: string,
): Promise<{ job: Job; created: boolean }> {
  const accountId = reach.accountId;
  const result = await em.transactional(async (tx) => {
    const source = await lockSourceInReach(tx, reach, sourceId);
    if (!source) throw notFound('No source with this id.');
    const existing = await liveDeletionJob(tx, accountId, sourceId);
    if (existing) return { jobId: existing, created: false };
    const jobId = randomUUID();
    await insertDeletionJob(tx, { id: jobId, accountId, sourceId, audience: source.audience });
    return { jobId, created: true };
  });
  const job = (await findJob(em.fork(), result.jobId))!;
  if (job.status === 'queued') await startDeletion({ id: job.id, accountId });
  return { job, created: result.created };
}

/** The account overview's lists and counts (sources not deleted; quarantined ones flagged). */
export async function overviewLists(em: EntityManager, accountId: string, limits: { sources: number; jobs: number }) {
  const sources = await activeSources(em, accountId, limits.sources);
  const jobs = await recentJobs(em, accountId, limits.jobs);
  const count = await activeRecordTotal(em, accountId);
  return {
    recordTotal: count,
    sources: sources.map((s) => ({
      id: s.id,
      kind: s.kind,
      url: s.url,
      filename: s.filename,
      title: s.title,
      contentType: s.content_type,
      status: s.status,
      quarantineReason: s.quarantine_reason,
      datedAt: s.dated_at,
      records: Number(s.records),
      createdAt: new Date(s.created_at).toISOString(),
    })),
    ingestJobs: jobs.map(publicJob),
  };
}
