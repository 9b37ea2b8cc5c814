import type { Client } from '@temporalio/client';
import {
  CAIRN_ACCOUNT,
  CAIRN_CONTENT_TYPE,
  CAIRN_KIND,
} from '../workflows/search-attributes.ts';
import type {
  accountDeletionWorkflow,
  creditSettlementSweeperWorkflow,
  ingestWorkflow,
  memoryBatchWorkflow,
  selfCheckWorkflow,
  sourceDeletionWorkflow,
} from '../workflows/index.ts';

/**
 * Typed helpers for starting workflows, with their id scheme and task queue in one place. Ids are
 * derived from the domain id so a repeated start finds the running or finished execution instead of
 * starting twice. Callers pass the base task queue (TEMPORAL_TASK_QUEUE); each workload has its own
 * queue derived from it (taskQueuesFor), with its own worker slots.
 */

/**
 * The task queues of the three workloads. Maintenance keeps the base name: executions started before
 * the queues were split (all on the base queue) are still polled there, whatever their type.
 */
export function taskQueuesFor(base: string) {
  return { memory: `${base}-memory`, ingest: `${base}-ingest`, maintenance: base } as const;
}
export type Workload = keyof ReturnType<typeof taskQueuesFor>;
/** One execution per id, ever: a start joins the running one, and never reruns a finished one. */
const ONCE = { workflowIdConflictPolicy: 'USE_EXISTING', workflowIdReusePolicy: 'REJECT_DUPLICATE' } as const;

/** A start refused because an execution with its id finished: it already ran, nothing to start. */
function alreadyRan(err: unknown): null {
  if ((err as { name?: string }).name === 'WorkflowExecutionAlreadyStartedError') return null;
  throw err;
}

export const selfCheckWorkflowId = (checkId: string) => `selfcheck-${checkId}`;

export async function runSelfCheck(
  client: Client,
  taskQueue: string,
  input: { checkId: string; requestedBy: string; timeoutMs?: number },
) {
  return client.workflow.execute<typeof selfCheckWorkflow>('selfCheckWorkflow', {
    taskQueue: taskQueuesFor(taskQueue).maintenance,
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
    taskQueue: taskQueuesFor(taskQueue).maintenance,
    workflowId: accountDeletionWorkflowId(accountId),
    args: [{ accountId }],
    typedSearchAttributes: [{ key: CAIRN_ACCOUNT, value: accountId }, { key: CAIRN_KIND, value: 'account-deletion' }],
    workflowIdConflictPolicy: 'USE_EXISTING',
    workflowIdReusePolicy: 'ALLOW_DUPLICATE',
  });
}

export const ingestWorkflowId = (jobId: string) => `ingest-${jobId}`;

/**
 * One workflow per ingest job; starting it again joins the existing execution. Its tasks carry the
 * account as their fairness key: the Temporal server dispatches a backlog round-robin across accounts,
 * so one account's hundred queued jobs do not hold another's one behind them.
 */
export async function startIngestJob(
  client: Client,
  taskQueue: string,
  job: { id: string; kind: 'url' | 'file'; accountId: string; contentType?: string | null },
  heartbeatTimeoutMs?: number,
) {
  return client.workflow.start<typeof ingestWorkflow>('ingestWorkflow', {
    taskQueue: taskQueuesFor(taskQueue).ingest,
    workflowId: ingestWorkflowId(job.id),
    args: [{ jobId: job.id, kind: job.kind, heartbeatTimeoutMs }],
    priority: { fairnessKey: job.accountId },
    typedSearchAttributes: [
      { key: CAIRN_ACCOUNT, value: job.accountId },
      { key: CAIRN_KIND, value: `ingest-${job.kind}` },
      ...(job.contentType ? [{ key: CAIRN_CONTENT_TYPE, value: job.contentType }] : []),
    ],
    ...ONCE,
  }).catch(alreadyRan);
}

export const sourceDeletionWorkflowId = (jobId: string) => `source-deletion-${jobId}`;

export async function startSourceDeletion(client: Client, taskQueue: string, job: { id: string; accountId: string }) {
  return client.workflow.start<typeof sourceDeletionWorkflow>('sourceDeletionWorkflow', {
    taskQueue: taskQueuesFor(taskQueue).maintenance,
    workflowId: sourceDeletionWorkflowId(job.id),
    args: [{ jobId: job.id }],
    typedSearchAttributes: [{ key: CAIRN_ACCOUNT, value: job.accountId }, { key: CAIRN_KIND, value: 'source-deletion' }],
    ...ONCE,
  }).catch(alreadyRan);
}

export const memoryBatchWorkflowId = (batchId: string) => `memory-batch-${batchId}`;

/**
 * Events per batch at most: a batch's Temporal cost (a start, its tasks and its history) is shared by its
 * events. The event ids are not a search attribute (the server caps a value at 2 KB, 50 ids, and indexes
 * it: sustained writes fell by a third); operators find an event's batch with `admin memory event`.
 */
export const MAX_MEMORY_BATCH = 100;

/** One workflow per batch of memory events (core/memory/dispatcher.ts); the batch id is new per dispatch. */
export async function startMemoryBatch(client: Client, taskQueue: string, batchId: string, eventIds: string[]) {
  return client.workflow.start<typeof memoryBatchWorkflow>('memoryBatchWorkflow', {
    taskQueue: taskQueuesFor(taskQueue).memory,
    workflowId: memoryBatchWorkflowId(batchId),
    args: [{ batchId, eventIds }],
    typedSearchAttributes: [{ key: CAIRN_KIND, value: 'memory-batch' }],
    ...ONCE,
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
    taskQueue: taskQueuesFor(taskQueue).maintenance,
    workflowId: creditSettlementSweeperWorkflowId(taskQueue),
    args: [config],
    signal: 'configureCreditSettlementSweeper', // configureSweeperSignal in workflows/credit-settlement.workflow.ts
    signalArgs: [config],
  });
}

/**
 * The workflow starts the domain is given (it never imports Temporal): each bound to the client and
 * the base task queue. `ingestHeartbeatMs`: the ingest job's heartbeat timeout (INGEST_HEARTBEAT_TIMEOUT_MS).
 */
export function workflowStarts(client: Client, taskQueue: string, opts: { ingestHeartbeatMs?: number } = {}) {
  return {
    ingestJob: (job: Parameters<typeof startIngestJob>[2]) => startIngestJob(client, taskQueue, job, opts.ingestHeartbeatMs),
    sourceDeletion: (job: { id: string; accountId: string }) => startSourceDeletion(client, taskQueue, job),
    /** The memory dispatcher's batches: start one and wait for its end. */
    memoryBatches: {
      maxEvents: MAX_MEMORY_BATCH,
      run: async (batchId: string, eventIds: string[]) => (await startMemoryBatch(client, taskQueue, batchId, eventIds)).result(),
    },
  };
}
