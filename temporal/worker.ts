import os from 'node:os';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker, type WorkflowBundle } from '@temporalio/worker';
import { CAIRN_SEARCH_ATTRIBUTES } from '../workflows/search-attributes.ts';
import { DEFAULT_INGEST_SLOTS, type WorkloadSlots } from '../platform/config.ts';
import type { Logger } from '../platform/logger.ts';
import type { WorkerMetrics } from '../platform/ops/metrics.ts';
import { activityLogInterceptor } from './activity-log.interceptor.ts';
import { bundleWorkflows } from './bundle.ts';
import { installTemporalRuntime } from './logging.ts';
import { ensureCreditSettlementSweeper, taskQueuesFor, type Workload } from './starts.ts';

export type WorkerDeps = {
  logger: Logger;
  temporalAddress: string;
  namespace: string;
  /** The base task queue (TEMPORAL_TASK_QUEUE): the worker polls each workload's queue derived from it. */
  taskQueue: string;
  /** The activities every workload's worker registers (activities/index.ts), built by the caller. */
  activities: object;
  /**
   * Work the process runs beside its workers once connected (bin/worker.ts: the memory event
   * dispatcher), given the client; stopped before the workers shut down.
   */
  background?: (client: Client) => { stop(): Promise<void> };
  /** A prebuilt bundle (tests bundle once per run); otherwise the worker bundles at start. */
  workflowBundle?: WorkflowBundle;
  /** This worker's identity (workerIdentity() by default). */
  identity?: string;
  /** Activity outcome metrics of this process; absent = not measured. */
  metrics?: WorkerMetrics;
  /**
   * SETTLEMENT_GRACE_SECONDS in ms: the worker starts (or reconfigures) the task queue's credit
   * settlement sweeper with it. Absent = leave the sweeper alone (tests that do not meter).
   */
  settlementGraceMs?: number;
  /** WORKER_*_SLOTS; absent = the defaults. */
  slots?: Partial<WorkloadSlots>;
};

const DEFAULT_SLOTS: WorkloadSlots = { ingest: DEFAULT_INGEST_SLOTS, memory: 4, maintenance: 2 };

/**
 * The workers of one process, one per workload's task queue, and its background work. Stop the
 * background work before shutting the workers down (the memory dispatcher would otherwise claim
 * batches nobody runs until they go stale), and before closing the connection.
 */
export type CairnWorker = {
  workers: Record<Workload, Worker>;
  connection: NativeConnection;
  identity: string;
  background: { stop(): Promise<void> };
  /** Runs every workload's worker; when one fails the others are shut down and the failure is thrown. */
  run(): Promise<void>;
  /** Starts the graceful shutdown of the workers still running (in-flight activities finish). */
  shutdown(): void;
};

/**
 * Registers Cairn's search attributes on the namespace (spec'd for operators in docs/operations.md):
 * workflow starts that carry them fail on a namespace that lacks them. A cluster that refuses (no
 * operator permission, Temporal Cloud) keeps the worker running: the operator registers them there.
 */
export async function ensureSearchAttributes(connection: Pick<NativeConnection, 'operatorService'>, namespace: string, logger: Logger): Promise<void> {
  try {
    const existing = await connection.operatorService.listSearchAttributes({ namespace });
    const missing = CAIRN_SEARCH_ATTRIBUTES.filter((k) => !(k.name in (existing.customAttributes ?? {})));
    if (missing.length === 0) return;
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: Object.fromEntries(missing.map((k) => [k.name, INDEXED_TYPE[k.type]])),
    });
    logger.info({ added: missing.map((k) => k.name) }, 'registered search attributes');
  } catch (err) {
    logger.warn({ err }, 'search attributes not registered; register them on the namespace (docs/operations.md)');
  }
}

/** temporal.api.enums.v1.IndexedValueType of the kinds Cairn uses. */
const INDEXED_TYPE = { KEYWORD: 2, KEYWORD_LIST: 7 } as const;

/** The identity a worker reports to Temporal (and its activities record): host and process id. */
export const workerIdentity = () => `cairn-worker@${os.hostname()}:${process.pid}`;

export async function createWorker(deps: WorkerDeps): Promise<CairnWorker> {
  installTemporalRuntime(deps.logger);
  const identity = deps.identity ?? workerIdentity();
  const connection = await NativeConnection.connect({ address: deps.temporalAddress });
  await ensureSearchAttributes(connection, deps.namespace, deps.logger);
  const workflowBundle = deps.workflowBundle ?? (await bundleWorkflows());
  const queues = taskQueuesFor(deps.taskQueue);
  const slots = { ...DEFAULT_SLOTS, ...deps.slots };
  // One SDK worker per workload: each polls its own queue with its own activity slots (and workflow
  // task slots), so a flood of one workload never waits in front of another. All register every
  // workflow and activity: an execution runs wherever it was started (older ones on the base queue).
  const make = (workload: Workload) =>
    Worker.create({
      connection,
      namespace: deps.namespace,
      taskQueue: queues[workload],
      identity,
      activities: deps.activities,
      workflowBundle,
      interceptors: { activity: [activityLogInterceptor(deps.logger.child({ component: 'activity' }), deps.metrics)] },
      maxConcurrentActivityTaskExecutions: slots[workload],
      // Give running activities time to finish on SIGTERM before the process exits.
      shutdownGraceTime: '10 seconds',
    });
  const workers = { memory: await make('memory'), ingest: await make('ingest'), maintenance: await make('maintenance') };
  const client = new Client({ connection, namespace: deps.namespace });
  if (deps.settlementGraceMs !== undefined) await ensureCreditSettlementSweeper(client, deps.taskQueue, deps.settlementGraceMs);
  const background = deps.background?.(client) ?? { async stop() {} };
  const all = Object.values(workers);
  const shutdown = () => {
    // A worker may already be draining on its own (its server went away); shutdown() then throws.
    for (const w of all) if (w.getState() === 'RUNNING') w.shutdown();
  };
  return {
    workers,
    connection,
    identity,
    background,
    shutdown,
    async run() {
      const runs = all.map((w) => w.run().catch((err: unknown) => {
        shutdown();
        throw err;
      }));
      const outcomes = await Promise.allSettled(runs);
      const failed = outcomes.find((o) => o.status === 'rejected');
      if (failed) throw failed.reason;
    },
  };
}
