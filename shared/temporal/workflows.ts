import type { Client } from '@temporalio/client';
import type {
  accountDeletionWorkflow,
  creditSettlementSweeperWorkflow,
  ingestWorkflow,
  memoryBatchWorkflow,
  selfCheckWorkflow,
  sourceDeletionWorkflow,
} from '../../workflows/index.ts';

/**
 * Typed helpers for starting workflows, with their id scheme in one place. Ids are derived from the
 * domain id so a repeated start finds the running or finished execution instead of starting twice.
 */
export const selfCheckWorkflowId = (checkId: string) => `selfcheck-${checkId}`;

export async function runSelfCheck(
  client: Client,
  taskQueue: string,
  input: { checkId: string; requestedBy: string; timeoutMs?: number },
) {
  return client.workflow.execute<typeof selfCheckWorkflow>('selfCheckWorkflow', {
    taskQueue,
    workflowId: selfCheckWorkflowId(input.checkId),
    args: [{ requestedBy: input.requestedBy }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    // No worker polling means nothing will ever pick this up: fail instead of hanging the operator.
    workflowExecutionTimeout: input.timeoutMs ?? 30_000,
  });
}

export const accountDeletionWorkflowId = (accountId: string) => `account-deletion-${accountId}`;

/**
 * Starts (or joins, if one is running) the deletion of an account. A finished failed run does not
 * block a retry: the id may be reused.
 */
export async function startAccountDeletion(client: Client, taskQueue: string, accountId: string) {
  return client.workflow.start<typeof accountDeletionWorkflow>('accountDeletionWorkflow', {
    taskQueue,
    workflowId: accountDeletionWorkflowId(accountId),
    args: [{ accountId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

export const ingestWorkflowId = (jobId: string) => `ingest-${jobId}`;

/** One workflow per ingest job; starting it again joins the existing execution. */
export async function startIngestJob(
  client: Client,
  taskQueue: string,
  job: { id: string; kind: 'url' | 'file' },
  heartbeatTimeoutMs?: number,
) {
  return client.workflow.start<typeof ingestWorkflow>('ingestWorkflow', {
    taskQueue,
    workflowId: ingestWorkflowId(job.id),
    args: [{ jobId: job.id, kind: job.kind, heartbeatTimeoutMs, buildEndsJob: true }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  }).catch((err: unknown) => {
    // A finished execution with this id means the job already ran: nothing to start.
    if ((err as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError') return null;
    throw err;
  });
}

export const sourceDeletionWorkflowId = (jobId: string) => `source-deletion-${jobId}`;

export async function startSourceDeletion(client: Client, taskQueue: string, jobId: string) {
  return client.workflow.start<typeof sourceDeletionWorkflow>('sourceDeletionWorkflow', {
    taskQueue,
    workflowId: sourceDeletionWorkflowId(jobId),
    args: [{ jobId }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  }).catch((err: unknown) => {
    if ((err as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError') return null;
    throw err;
  });
}

export const memoryBatchWorkflowId = (batchId: string) => `memory-batch-${batchId}`;

/** One workflow per batch of memory events (shared/memory/dispatcher.ts); the batch id is new per dispatch. */
export async function startMemoryBatch(client: Client, taskQueue: string, batchId: string, eventIds: string[]) {
  return client.workflow.start<typeof memoryBatchWorkflow>('memoryBatchWorkflow', {
    taskQueue,
    workflowId: memoryBatchWorkflowId(batchId),
    args: [{ batchId, eventIds }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'REJECT_DUPLICATE',
  });
}

export const creditSettlementSweeperWorkflowId = (taskQueue: string) => `credit-settlement-sweeper-${taskQueue}`;

/**
 * Makes sure the one settlement sweeper of this task queue runs, with this grace period: starts it, or
 * signals the running one its (possibly changed) settings. Called by every worker at start; one RPC.
 * It sweeps every grace period, at least every second and at most every minute.
 */
export async function ensureCreditSettlementSweeper(client: Client, taskQueue: string, graceMs: number) {
  const config = { graceMs, intervalMs: Math.min(60_000, Math.max(1000, graceMs)) };
  return client.workflow.signalWithStart<typeof creditSettlementSweeperWorkflow, [typeof config]>('creditSettlementSweeperWorkflow', {
    taskQueue,
    workflowId: creditSettlementSweeperWorkflowId(taskQueue),
    args: [config],
    signal: 'configureCreditSettlementSweeper', // configureSweeperSignal in workflows/credit-settlement.workflow.ts
    signalArgs: [config],
  });
}
