// Production entrypoint: one Temporal worker on TEMPORAL_TASK_QUEUE. Run as many as needed.
import { loadConfig, requireDatabaseUrl, requireTemporalAddress } from '../shared/config.ts';
import { createOrm } from '../shared/db/orm.ts';
import { createLogger } from '../shared/logger.ts';
import { exitWithSupervisor, onShutdown, runMain } from '../shared/process.ts';
import { createWorkerMetrics, serveMetrics } from '../shared/ops/metrics.ts';
import { createWorker } from '../shared/temporal/worker.ts';

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config, { name: 'worker' });
  const orm = await createOrm(requireDatabaseUrl(config), logger);
  const metrics = createWorkerMetrics();
  const { worker, connection, identity } = await createWorker({
    orm,
    logger,
    temporalAddress: requireTemporalAddress(config),
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ingest: { urlAllowlist: config.ingestUrlAllowlist, fetchTimeoutMs: config.ingestFetchTimeoutMs },
    metrics,
  });
  // Metrics are an aid, not a dependency: a taken port (several workers on one host) is logged, not fatal.
  const metricsServer = config.ops.workerMetricsPort
    ? await serveMetrics(metrics.registry, config.host, config.ops.workerMetricsPort).catch((err: unknown) => {
        logger.warn({ err, port: config.ops.workerMetricsPort }, 'worker metrics not served');
        return undefined;
      })
    : undefined;

  // worker.shutdown() lets in-flight activities finish (shutdownGraceTime); run() then resolves.
  onShutdown(async (signal) => {
    logger.info({ signal }, 'worker shutting down');
    metricsServer?.close();
    worker.shutdown();
    await running;
  }, config.shutdownTimeoutMs);
  exitWithSupervisor();

  logger.info({ identity, taskQueue: config.temporal.taskQueue }, 'worker started');
  const running = worker.run().finally(async () => {
    await connection.close();
    await orm.close();
  });
  await running;
});
