// Production entrypoint: Temporal workers on the workload queues derived from TEMPORAL_TASK_QUEUE
// (memory, ingest, maintenance), each with its own slots. Run as many processes as needed.
import { setTimeout as sleep } from 'node:timers/promises';
import { loadConfig, requireDatabaseUrl, requireTemporalAddress, type Config } from '../platform/config.ts';
import { createOrm, type Orm } from '../platform/db/orm.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { exitWithSupervisor, onShutdown, runMain } from '../platform/entrypoint.ts';
import { createWorkerMetrics, serveMetrics } from '../platform/ops/metrics.ts';
import { lowerOwnPriority } from '../platform/ops/priority.ts';
import { createActivities } from '../activities/index.ts';
import { extractionPoolFor, type ExtractionPool } from '../core/ingest/extraction/pool.ts';
import { startMemoryDispatcher } from '../core/memory/dispatcher.ts';
import { createEmbedder } from '../core/retrieval/embeddings.ts';
import { taskQueuesFor, workflowStarts } from '../temporal/starts.ts';
import { bundleWorkflows } from '../temporal/bundle.ts';
import { createWorker, workerIdentity, type CairnWorker } from '../temporal/worker.ts';

/** Every activity, bound to this process's dependencies (built once: they outlive reconnects). */
function activitiesOf(config: Config, deps: { orm: Orm; logger: Logger; extraction: ExtractionPool; identity: string }) {
  return createActivities({
    orm: deps.orm,
    logger: deps.logger.child({ component: 'activities' }),
    workerIdentity: deps.identity,
    ingest: {
      urlAllowlist: config.ingestUrlAllowlist, fetchTimeoutMs: config.ingestFetchTimeoutMs, ocrCreditsPerPage: config.ocr.creditsPerPage,
      shares: { slots: config.worker.slots.ingest, largeBytes: config.ingestLargeBytes },
    },
    extraction: deps.extraction,
    memoryDeriver: config.memory.deriver,
    embedder: config.embeddings ? createEmbedder(config.embeddings) : null,
  });
}

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config, { name: 'worker' });
  // Background work yields the CPU to request handling on a platform host (platform/ops/priority.ts).
  // First thing, so every thread started later inherits it.
  const nice = config.worker.nice;
  if (nice > 0 && lowerOwnPriority(nice) === 0) logger.warn({ nice }, 'worker priority not lowered');
  const orm = await createOrm(requireDatabaseUrl(config), logger, { applicationName: 'cairn-worker' });
  const metrics = createWorkerMetrics();
  // Extraction processes for the builds; created once, they outlive reconnects to Temporal.
  const extraction = extractionPoolFor(config, logger.child({ component: 'extraction' }));
  const identity = workerIdentity();
  const activities = activitiesOf(config, { orm, logger, extraction, identity });
  // Bundled once (in a child process): a reconnect below must not pay for webpack again.
  const workflowBundle = await bundleWorkflows();
  // Metrics are an aid, not a dependency: a taken port (several workers on one host) is logged, not fatal.
  const metricsServer = config.ops.workerMetricsPort
    ? await serveMetrics(metrics.registry, config.host, config.ops.workerMetricsPort, config.ops.metrics).catch((err: unknown) => {
        logger.warn({ err, port: config.ops.workerMetricsPort }, 'worker metrics not served');
        return undefined;
      })
    : undefined;

  let stopping = false;
  let current: CairnWorker | undefined;
  // worker.shutdown() lets in-flight activities finish (shutdownGraceTime); run() then resolves.
  onShutdown(async (signal) => {
    logger.info({ signal }, 'worker shutting down');
    stopping = true;
    await current?.background.stop();
    metricsServer?.close();
    current?.shutdown();
    await running;
  }, config.shutdownTimeoutMs);
  exitWithSupervisor();
  process.channel?.unref(); // the supervisor's IPC channel (npm start) never keeps this process alive

  // The worker outlives the Temporal server: when the server goes away (restart, network) the SDK
  // worker fails; we reconnect with backoff instead of exiting, so no supervisor is needed for that.
  const running = (async () => {
    let backoffMs = 1000;
    while (!stopping) {
      try {
        current = await createWorker({
          logger,
          identity,
          activities,
          // Every worker dispatches memory events (writes only queue them): one batch workflow per claim.
          background: (client) => startMemoryDispatcher({ orm, batches: workflowStarts(client, config.temporal.taskQueue).memoryBatches, logger }),
          temporalAddress: requireTemporalAddress(config),
          namespace: config.temporal.namespace,
          taskQueue: config.temporal.taskQueue,
          metrics,
          workflowBundle,
          settlementGraceMs: config.metering.settlementGraceMs,
          slots: config.worker.slots,
        });
        if (stopping) break;
        logger.info({ identity: current.identity, taskQueues: taskQueuesFor(config.temporal.taskQueue), slots: config.worker.slots }, 'worker started');
        // Under `npm start` the supervisor says the service is ready only once the worker polls (bin/start.ts).
        if (process.connected) process.send?.('ready');
        backoffMs = 1000;
        await current.run();
      } catch (err) {
        if (stopping) break;
        logger.error({ err, retryInMs: backoffMs }, 'worker lost the Temporal server; reconnecting');
        await sleep(backoffMs);
        backoffMs = Math.min(backoffMs * 2, 30_000);
      } finally {
        await current?.background.stop();
        // The connection may already be broken; closing it is best effort.
        await current?.connection.close().catch((err: unknown) => logger.debug({ err }, 'closing the old Temporal connection failed'));
        current = undefined;
      }
    }
    await Promise.allSettled([orm.close(), extraction.close()]);
  })();
  await running;
});
