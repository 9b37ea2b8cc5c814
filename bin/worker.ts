// Production entrypoint: one Temporal worker on TEMPORAL_TASK_QUEUE. Run as many as needed.
import { loadConfig, requireDatabaseUrl, requireTemporalAddress } from '../shared/config.ts';
import { createOrm } from '../shared/db/orm.ts';
import { createLogger } from '../shared/logger.ts';
import { exitWithSupervisor, onShutdown, runMain } from '../shared/process.ts';
import { createWorker } from '../shared/temporal/worker.ts';

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config, { name: 'worker' });
  const orm = await createOrm(requireDatabaseUrl(config), logger);
  const { worker, connection, identity } = await createWorker({
    orm,
    logger,
    temporalAddress: requireTemporalAddress(config),
    namespace: config.temporal.namespace,
    taskQueue: config.temporal.taskQueue,
    ingest: { urlAllowlist: config.ingestUrlAllowlist, fetchTimeoutMs: config.ingestFetchTimeoutMs },
  });

  // worker.shutdown() lets in-flight activities finish (shutdownGraceTime); run() then resolves.
  onShutdown(async (signal) => {
    logger.info({ signal }, 'worker shutting down');
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
