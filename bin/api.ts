// Production entrypoint: the HTTP API on PORT and the MCP listener on MCP_PORT.
import { buildApp, buildMcpApp } from '../api/app.ts';
import { loadConfig, requireDatabaseUrl, requireTemporalAddress } from '../platform/config.ts';
import { createOrm, migrate, pingDatabase } from '../platform/db/orm.ts';
import { createLogger } from '../platform/logger.ts';
import { exitWithSupervisor, onShutdown, runMain } from '../platform/entrypoint.ts';
import { createRateLimiter } from '../core/metering/rate-limit.ts';
import { extractionPoolFor } from '../core/ingest/extraction/pool.ts';
import { createOauthServer } from '../core/oauth/server.ts';
import { createFreeWorkLimiter } from '../platform/ops/free-work.ts';
import { createApiMetrics } from '../platform/ops/metrics.ts';
import { searchIndexFor } from '../core/retrieval/search-index.ts';
import { createTemporalClient } from '../temporal/client.ts';

runMain(async () => {
  const config = loadConfig();
  const logger = createLogger(config, { name: 'api' });
  const orm = await createOrm(requireDatabaseUrl(config), logger, { applicationName: 'cairn-api' });
  if (config.migrateOnStart) {
    const applied = await migrate(orm);
    if (applied.length) logger.info({ applied }, 'applied migrations');
  }
  const temporal = createTemporalClient(requireTemporalAddress(config), config.temporal.namespace);
  const rateLimiter = createRateLimiter(requireDatabaseUrl(config), config.metering.rateLimitPerMinute, logger, {
    registrationsPerHour: config.oauth.registrationsPerHour,
    deviceCodesPerHour: config.auth.deviceCodesPerHour,
  });
  // After migrations: the built-in authorization server reads its shared keys from the database.
  const oauth = await createOauthServer({ config, orm });
  // One pool and one free-work count for both listeners of this process.
  const extraction = extractionPoolFor(config, logger.child({ component: 'extraction' }));
  const searchIndex = searchIndexFor(config, orm, logger);
  const deps = {
    config,
    oauth,
    logger,
    orm,
    temporal,
    rateLimiter,
    metrics: createApiMetrics(orm, searchIndex),
    searchIndex,
    readiness: { postgres: () => pingDatabase(orm), temporal: () => temporal.ping() },
    extraction,
    freeWork: createFreeWorkLimiter(config.freeWorkPerAccount),
  };
  const api = await buildApp(deps);
  const mcp = await buildMcpApp({ ...deps, logger: logger.child({ listener: 'mcp' }) });

  onShutdown(async (signal) => {
    logger.info({ signal }, 'api shutting down');
    await Promise.allSettled([api.close(), mcp.close()]);
    await Promise.allSettled([orm.close(), temporal.close(), rateLimiter.close(), extraction.close()]);
  }, config.shutdownTimeoutMs);
  exitWithSupervisor();

  await api.listen({ host: config.host, port: config.port });
  await mcp.listen({ host: config.host, port: config.mcpPort });
});
