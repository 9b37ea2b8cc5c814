import { ActivityFailure, ApplicationFailure, proxyActivities, sleep, upsertSearchAttributes } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';
import { CAIRN_CONTENT_TYPE, CAIRN_STATUS } from './search-attributes.ts';

export type IngestInput = {
  jobId: string;
  /** Uploads are stored at submission: nothing to fetch. */
  kind: 'url' | 'file';
  /** How soon a silent (crashed) worker's activity is retried elsewhere; INGEST_HEARTBEAT_TIMEOUT_SECONDS. */
  heartbeatTimeoutMs?: number;
};

// Fetching talks to the outside world: a couple of minutes per attempt, three attempts with backoff
// for transient network trouble; refusals (blocked address, unsupported type) are non-retryable.
// Extraction of up to 50 MB can take a while; retried for infrastructure failures (worker crash,
// database blip), never for a bad document. Both heartbeat, so a killed worker is noticed quickly.
function stepActivities(heartbeatTimeoutMs: number) {
  const retry = { maximumAttempts: 3, initialInterval: '2 seconds', backoffCoefficient: 2 } as const;
  return {
    fetching: proxyActivities<Activities>({ startToCloseTimeout: '2 minutes', heartbeatTimeout: heartbeatTimeoutMs, retry }),
    building: proxyActivities<Activities>({ startToCloseTimeout: '10 minutes', heartbeatTimeout: heartbeatTimeoutMs, retry }),
    // OCR runs a few seconds per page, up to INGEST_MAX_PDF_PAGES pages: a long limit, a heartbeat per
    // batch. Retries never bill twice (stored batches are skipped, reservations have fixed ids).
    recognising: proxyActivities<Activities>({ startToCloseTimeout: '2 hours', heartbeatTimeout: heartbeatTimeoutMs, retry }),
  };
}
// Job bookkeeping must happen: retried until the database answers.
const bookkeeping = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds' },
});

/** The public failure of a job: the activity's own message when it refused, a generic one otherwise. */
function publicFailure(err: unknown): { message: string; retryable: boolean } {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  if (cause instanceof ApplicationFailure && cause.type === 'IngestRefused') {
    const retryable = Boolean((cause.details?.[0] as { retryable?: boolean } | undefined)?.retryable);
    return { message: cause.message, retryable };
  }
  return { message: 'Processing failed unexpectedly; the source can be submitted again.', retryable: true };
}

/**
 * Runs a large step until it gets its turn: a step over its account's share of the worker's ingest
 * slots yields at once (core/ingest/build/shares.ts), and is asked again after a wait growing from one
 * to 15 seconds. A yield is not an attempt: the job still records one attempt per real try.
 */
async function inTurn<T extends { status: string }>(step: () => Promise<T | { status: 'yielded' }>): Promise<T> {
  for (let waitS = 1; ; waitS = Math.min(waitS * 2, 15)) {
    const result = await step();
    if (result.status !== 'yielded') return result as T;
    await sleep(`${waitS} seconds`);
  }
}

export async function ingestWorkflow(input: IngestInput): Promise<{ status: string }> {
  const { fetching, building, recognising } = stepActivities(input.heartbeatTimeoutMs ?? 120_000);
  try {
    const fetched = input.kind === 'file' ? { crossSiteRedirect: false } : await fetching.acquireIngestSource({ jobId: input.jobId });
    const build = { jobId: input.jobId, crossSiteRedirect: fetched.crossSiteRedirect };
    let result = await inTurn(() => building.buildIngestRecords(build));
    // Scanned pages without recognised text: OCR them (its own activity, in batches), then build again.
    if (result.status === 'needs_ocr') {
      const pages = result.pages;
      await inTurn(async () => {
        const done = await recognising.recogniseIngestPages({ jobId: input.jobId, pages });
        return 'status' in done ? done : { status: 'recognised' };
      });
      result = await inTurn(() => building.buildIngestRecords(build));
      if (result.status === 'needs_ocr') throw ApplicationFailure.nonRetryable('OCR left pages without text', 'OcrIncomplete');
    }
    // The build step ends the job in its own transaction (core/ingest/build/build.ts buildSourceRecords).
    // Operators filter on these in the Temporal UI (`CairnStatus = "failed"`).
    upsertSearchAttributes([
      { key: CAIRN_STATUS, value: result.status },
      ...(result.contentType ? [{ key: CAIRN_CONTENT_TYPE, value: result.contentType }] : []),
    ]);
    return { status: result.status };
  } catch (err) {
    const failure = publicFailure(err);
    await bookkeeping.failIngestJob({ jobId: input.jobId, ...failure });
    upsertSearchAttributes([{ key: CAIRN_STATUS, value: 'failed' }]);
    // Recorded first, then thrown: the execution shows Failed in the Temporal UI, with the job's message.
    throw ApplicationFailure.nonRetryable(failure.message, 'IngestFailed');
  }
}

export async function sourceDeletionWorkflow(input: { jobId: string }): Promise<{ status: string }> {
  await bookkeeping.deleteSourceRecords(input);
  await bookkeeping.completeSourceDeletion(input);
  return { status: 'succeeded' };
}
