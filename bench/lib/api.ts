import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { buildApp } from '../../api/app.ts';
import { loadConfig, type Config } from '../../platform/config.ts';
import { pingDatabase, type Orm } from '../../platform/db/orm.ts';
import { createLogger } from '../../platform/logger.ts';
import { extractionPoolFor } from '../../core/ingest/extraction/pool.ts';
import { createOauthServer } from '../../core/oauth/server.ts';
import { createFreeWorkLimiter } from '../../platform/ops/free-work.ts';
import type { RateLimiter } from '../../core/metering/rate-limit.ts';
import { createTemporalClient } from '../../temporal/client.ts';
import { searchIndexFor, type SearchIndex } from '../../core/retrieval/search-index.ts';
import type { Infra } from './infra.ts';

export type BenchApi = { app: FastifyInstance; baseUrl: string; config: Config; searchIndex: SearchIndex };

/**
 * The real API (buildApp, as bin/api.ts wires it) listening on 127.0.0.1 on a free port, over real HTTP.
 * Logs go to stderr at `warn`: per-request info lines would measure the terminal, not the service.
 *
 * `temporalAddress`: pass one when the measured routes start workflows; otherwise the API gets a lazily
 * connected client that is never contacted (no idle Temporal server competes for the CPU).
 * `extend` may add bench-only routes before the server starts listening.
 */
export async function startBenchApi(
  infra: Infra,
  opts: {
    orm: Orm;
    temporalAddress?: string;
    /** Also mount the MCP endpoint under /mcp (with the built-in authorization server, as bin/api.ts). */
    mcp?: boolean;
    rateLimiter?: RateLimiter;
    env?: Record<string, string>;
    extend?: (app: FastifyInstance) => void;
  },
): Promise<BenchApi> {
  const config = loadConfig({
    PORT: '8080',
    LOG_LEVEL: 'warn',
    TEMPORAL_TASK_QUEUE: 'bench-unused',
    ...opts.env,
  });
  const logger = createLogger(config, { name: 'api', destination: pino.destination(2) });
  const temporal = createTemporalClient(opts.temporalAddress ?? '127.0.0.1:9', config.temporal.namespace);
  infra.onStop(() => temporal.close());
  const searchIndex = searchIndexFor(config, opts.orm, logger);
  const oauth = opts.mcp ? await createOauthServer({ config, orm: opts.orm }) : undefined;
  const extraction = extractionPoolFor(config, logger);
  infra.onStop(() => extraction.close());
  const app = await buildApp({
    config,
    logger,
    orm: opts.orm,
    temporal,
    searchIndex,
    ...(oauth ? { oauth } : {}),
    ...(opts.rateLimiter ? { rateLimiter: opts.rateLimiter } : {}),
    readiness: { postgres: () => pingDatabase(opts.orm), temporal: () => temporal.ping() },
    extraction,
    freeWork: createFreeWorkLimiter(config.freeWorkPerAccount),
  });
  opts.extend?.(app);
  await app.listen({ host: '127.0.0.1', port: 0 });
  infra.onStop(() => app.close());
  const { port } = app.server.address() as { port: number };
  const baseUrl = `http://127.0.0.1:${port}`;
  // The port is known only now: make the server's own origin its public address and an allowed origin,
  // so browser-style writes (login with CSRF header and Origin) are accepted.
  config.publicBaseUrl = baseUrl;
  config.allowedOrigins.push(baseUrl);
  return { app, baseUrl, config, searchIndex };
}
