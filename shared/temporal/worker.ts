import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Client } from '@temporalio/client';
import { NativeConnection, Worker, bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import { createActivities } from '../../activities/index.ts';
import { DEFAULT_MAX_CONCURRENT_ACTIVITIES } from '../config.ts';
import type { Orm } from '../db/orm.ts';
import type { Logger } from '../logger.ts';
import { startMemoryDispatcher, type DispatcherOptions } from '../memory/dispatcher.ts';
import type { OpenAiDeriverConfig } from '../memory/openai-deriver.ts';
import { createEmbedder, type EmbeddingsConfig } from '../retrieval/embeddings.ts';
import type { WorkerMetrics } from '../ops/metrics.ts';
import { activityLogInterceptor } from './activity-log.interceptor.ts';
import { installTemporalRuntime, temporalLoggerFromPino } from './logging.ts';
import { ensureCreditSettlementSweeper } from './workflows.ts';

export const workflowsPath = fileURLToPath(new URL('../../workflows/index.ts', import.meta.url));

/**
 * Bundles workflow code with webpack. Our sources use explicit `.ts` import specifiers (Node's type
 * stripping needs them); the bundler resolves those as plain files, and `.js` specifiers are mapped to
 * `.ts` for good measure (sdk-typescript#1185).
 */
export async function bundleWorkflows(logger?: Logger): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath,
    // webpack's report is noise at info level; keep it for debugging.
    ...(logger ? { logger: temporalLoggerFromPino(logger.child({ component: 'bundler' }, { level: 'warn' })) } : {}),
    webpackConfigHook: (config) => {
      config.resolve = {
        ...config.resolve,
        extensionAlias: { '.js': ['.ts', '.js'] },
      };
      return config;
    },
  });
}

export type WorkerDeps = {
  orm: Orm;
  logger: Logger;
  temporalAddress: string;
  namespace: string;
  taskQueue: string;
  ingest: { urlAllowlist: string[]; fetchTimeoutMs: number };
  /** The model-backed claim deriver (MEMORY_DERIVER_*); absent = the built-in rules. */
  memoryDeriver?: OpenAiDeriverConfig | null;
  /** The embeddings provider (EMBEDDINGS_*); absent = none. */
  embeddings?: EmbeddingsConfig | null;
  /** A prebuilt bundle (tests bundle once per run); otherwise the worker bundles at start. */
  workflowBundle?: WorkflowBundle;
  identity?: string;
  /** Activity outcome metrics of this process; absent = not measured. */
  metrics?: WorkerMetrics;
  /**
   * SETTLEMENT_GRACE_SECONDS in ms: the worker starts (or reconfigures) the task queue's credit
   * settlement sweeper with it. Absent = leave the sweeper alone (tests that do not meter).
   */
  settlementGraceMs?: number;
  /** WORKER_MAX_CONCURRENT_ACTIVITIES; absent = the same default. */
  maxConcurrentActivities?: number;
  /** Tuning of the memory event dispatcher (tests shorten its stale period). */
  memoryDispatch?: DispatcherOptions;
};


/**
 * A worker and its memory event dispatcher. Stop the dispatcher before shutting the worker down (it
 * would otherwise claim batches nobody runs until they go stale), and before closing the connection.
 */
export type CairnWorker = { worker: Worker; connection: NativeConnection; identity: string; dispatcher: { stop(): Promise<void> } };

export async function createWorker(deps: WorkerDeps): Promise<CairnWorker> {
  installTemporalRuntime(deps.logger);
  const identity = deps.identity ?? `cairn-worker@${os.hostname()}:${process.pid}`;
  const connection = await NativeConnection.connect({ address: deps.temporalAddress });
  const activities = createActivities({
    orm: deps.orm,
    logger: deps.logger.child({ component: 'activities' }),
    workerIdentity: identity,
    ingest: deps.ingest,
    memoryDeriver: deps.memoryDeriver,
    embedder: deps.embeddings ? createEmbedder(deps.embeddings) : null,
  });
  const worker = await Worker.create({
    connection,
    namespace: deps.namespace,
    taskQueue: deps.taskQueue,
    identity,
    activities,
    workflowBundle: deps.workflowBundle ?? (await bundleWorkflows(deps.logger)),
    interceptors: { activity: [activityLogInterceptor(deps.logger.child({ component: 'activity' }), deps.metrics)] },
    // Several ingest jobs at once overlap one job's database waits with another's extraction; the bound
    // keeps memory predictable. Workflow tasks are small and keep the SDK's default concurrency.
    maxConcurrentActivityTaskExecutions: deps.maxConcurrentActivities ?? DEFAULT_MAX_CONCURRENT_ACTIVITIES,
    // Give running activities time to finish on SIGTERM before the process exits.
    shutdownGraceTime: '10 seconds',
  });
  const client = new Client({ connection, namespace: deps.namespace });
  if (deps.settlementGraceMs !== undefined) await ensureCreditSettlementSweeper(client, deps.taskQueue, deps.settlementGraceMs);
  // Every worker dispatches memory events (writes only queue them): one batch workflow per claim.
  const dispatcher = startMemoryDispatcher({ orm: deps.orm, temporal: client, taskQueue: deps.taskQueue, logger: deps.logger, ...deps.memoryDispatch });
  return { worker, connection, identity, dispatcher };
}
