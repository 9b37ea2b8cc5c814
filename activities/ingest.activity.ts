import { ApplicationFailure, Context } from '@temporalio/activity';
import { AppError } from '../platform/errors.ts';
import { ExtractionError } from '../core/ingest/extract/types.ts';
import {
  acquireSource,
  buildSourceRecords,
  completeDeletionJob,
  deleteSourceRecords,
  failJob,
  UnsupportedSourceError,
} from '../core/ingest/build/build.ts';
import { jobShape, recordAttempt } from '../core/ingest/build/build.queries.ts';
import { createIngestShares } from '../core/ingest/build/shares.ts';
import { recogniseJobPages } from '../core/ingest/ocr/live.ts';
import { localOcrProvider } from '../core/ingest/ocr/provider.ts';
import { FetchRefusedError } from '../platform/net/safe-fetch.ts';
import type { ActivityDeps } from './deps.ts';
import { withHeartbeats } from './heartbeats.ts';

/**
 * Known refusals become non-retryable failures carrying a message safe to show the user; transient
 * fetch problems stay retryable (and say so in the job's failure once retries are spent).
 */
function asFailure(err: unknown): unknown {
  if (err instanceof FetchRefusedError) {
    return ApplicationFailure.create({
      type: 'IngestRefused', message: err.publicMessage, nonRetryable: !err.retryable, details: [{ retryable: err.retryable }],
    });
  }
  if (err instanceof ExtractionError || err instanceof UnsupportedSourceError) {
    return ApplicationFailure.create({ type: 'IngestRefused', message: err.publicMessage, nonRetryable: true, details: [{ retryable: false }] });
  }
  if (err instanceof AppError && err.status < 500) {
    return ApplicationFailure.create({ type: 'IngestRefused', message: err.message, nonRetryable: true, details: [{ retryable: false }] });
  }
  return err;
}

export function createIngestActivities(deps: ActivityDeps) {
  const policy = { allowlist: deps.ingest.urlAllowlist };
  const ocr = localOcrProvider(deps.extraction, deps.ingest.ocrCreditsPerPage);
  const shares = createIngestShares(deps.ingest.shares);
  /** The step's turn in this worker's share (shares.ts); a retry (attempt > 1) always runs. */
  const turn = async (jobId: string, large: boolean) => {
    const shape = await jobShape(deps.orm.em.fork(), jobId);
    return shares.enter(shape.accountId, large ? Infinity : shape.sizeBytes, Context.current().info.attempt > 1);
  };
  return {
    async acquireIngestSource(input: { jobId: string }) {
      const em = deps.orm.em.fork();
      await recordAttempt(em, input.jobId, Context.current().info.attempt);
      try {
        return await withHeartbeats(() => acquireSource(em, input.jobId, { policy, timeoutMs: deps.ingest.fetchTimeoutMs }));
      } catch (err) {
        throw asFailure(err);
      }
    },
    async buildIngestRecords(input: { jobId: string; crossSiteRedirect: boolean }) {
      const attempt = Context.current().info.attempt;
      const leave = await turn(input.jobId, false);
      if (!leave) return { status: 'yielded' as const };
      try {
        return await withHeartbeats(() =>
          buildSourceRecords(deps.orm.em.fork(), deps.extraction, {
            jobId: input.jobId, fetch: { crossSiteRedirect: input.crossSiteRedirect }, attempt, embedding: { embedder: deps.embedder ?? null, log: deps.logger },
          }),
        );
      } catch (err) {
        throw asFailure(err);
      } finally {
        leave();
      }
    },
    /** OCR of the job's scanned pages, in batches billed once across retries (core/ingest/ocr/live.ts). */
    async recogniseIngestPages(input: { jobId: string; pages: number[] }) {
      const ctx = Context.current();
      const leave = await turn(input.jobId, true);
      if (!leave) return { status: 'yielded' as const };
      try {
        return await withHeartbeats(() => recogniseJobPages(deps.orm.em.fork(), ocr, input, (done) => ctx.heartbeat(done)));
      } catch (err) {
        throw asFailure(err);
      } finally {
        leave();
      }
    },
    async failIngestJob(input: { jobId: string; message: string; retryable: boolean }) {
      await failJob(deps.orm.em.fork(), input.jobId, { message: input.message, retryable: input.retryable });
    },
    async deleteSourceRecords(input: { jobId: string }) {
      await deleteSourceRecords(deps.orm.em.fork(), input.jobId);
    },
    async completeSourceDeletion(input: { jobId: string }) {
      await completeDeletionJob(deps.orm.em.fork(), input.jobId);
    },
  };
}
