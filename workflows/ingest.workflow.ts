import { ActivityFailure, ApplicationFailure, proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export type IngestInput = { jobId: string };

// Fetching talks to the outside world: a couple of minutes per attempt, three attempts with backoff
// for transient network trouble; refusals (blocked address, unsupported type) are non-retryable.
const fetching = proxyActivities<Activities>({
  startToCloseTimeout: '2 minutes',
  retry: { maximumAttempts: 3, initialInterval: '2 seconds', backoffCoefficient: 2 },
});
// Extraction of up to 50 MB can take a while; retried for infrastructure failures (worker crash,
// database blip), never for a bad document.
const building = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  retry: { maximumAttempts: 3, initialInterval: '2 seconds', backoffCoefficient: 2 },
});
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

export async function ingestWorkflow(input: IngestInput): Promise<{ status: string }> {
  try {
    const fetched = await fetching.acquireIngestSource(input);
    const result = await building.buildIngestRecords({ jobId: input.jobId, crossSiteRedirect: fetched.crossSiteRedirect });
    await bookkeeping.completeIngestJob({ jobId: input.jobId, status: result.status });
    return { status: result.status };
  } catch (err) {
    await bookkeeping.failIngestJob({ jobId: input.jobId, ...publicFailure(err) });
    return { status: 'failed' };
  }
}

export async function sourceDeletionWorkflow(input: IngestInput): Promise<{ status: string }> {
  await bookkeeping.deleteSourceRecords(input);
  await bookkeeping.completeSourceDeletion(input);
  return { status: 'succeeded' };
}
