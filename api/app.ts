import type { SearchIndex } from '../core/retrieval/search-index.ts';
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { ZodType } from 'zod';
import type { Config } from '../platform/config.ts';
import { AppError } from '../platform/errors.ts';
import { withoutControlCharacters } from '../core/contracts/common.ts';
import type { Orm } from '../platform/db/orm.ts';
import type { ExtractionPool } from '../core/ingest/extraction/pool.ts';
import type { FreeWorkLimiter } from '../platform/ops/free-work.ts';
import type { Logger } from '../platform/logger.ts';
import type { ApiMetrics } from '../platform/ops/metrics.ts';
import type { RateLimiter } from '../core/metering/rate-limit.ts';
import type { OauthServer } from '../core/oauth/server.ts';
import type { TemporalClientHandle } from '../temporal/client.ts';
import { mcpEndpoint, protectedResourceMetadata } from './mcp/endpoint.ts';
import { MCP_TOOLS } from './mcp/tools/index.ts';
import type { McpTool } from './mcp/tools/registry.ts';
import { interactionRoutes } from './oauth/interaction.ts';
import { oauthProviderRoutes } from './oauth/provider-routes.ts';
import { consolePlugin } from './console/plugin.ts';
import { authPlugin } from './plugins/auth.ts';
import { errorsPlugin, frameworkErrors } from './plugins/errors.ts';
import { API_DOCUMENT_VERSION, openapiPlugin } from './plugins/openapi.ts';
import { metricsPlugin } from './plugins/metrics.ts';
import { accessRoutes } from './routes/access/index.ts';
import { apiKeyRoutes } from './routes/account/api-keys.ts';
import { connectedAppRoutes } from './routes/account/connected-apps.ts';
import { deletionRoutes } from './routes/account/deletion.ts';
import { overviewRoutes } from './routes/account/overview.ts';
import { passwordRoutes } from './routes/account/password.ts';
import { usageRoutes } from './routes/account/usage.ts';
import { authRoutes } from './routes/auth/index.ts';
import { cliAuthRoutes } from './routes/cli-auth/index.ts';
import { healthRoutes, type ReadinessCheck } from './routes/health/index.ts';
import { INGEST_API, INGEST_CONSOLE, ingestJobRoutes } from './routes/ingest/jobs.ts';
import { ingestSubmitRoutes } from './routes/ingest/submit.ts';
import { queryRoutes } from './routes/query/index.ts';
import { queryServices } from '../core/query/run.ts';
import { memoryClaimRoutes } from './routes/memory/claims.ts';
import { MEMORY_API, MEMORY_CONSOLE } from './routes/memory/common.ts';
import { memoryConversationRoutes } from './routes/memory/conversation.ts';
import { memoryEventRoutes } from './routes/memory/events.ts';
import { memoryLabelRoutes } from './routes/memory/labels.ts';

export type AppDeps = {
  config: Config;
  logger: Logger;
  orm: Orm;
  temporal: TemporalClientHandle;
  /** Account-wide throttling of every authenticated request; absent = unthrottled (unit tests). */
  rateLimiter?: RateLimiter;
  /** Named dependency probes for /readyz (postgres, temporal). */
  readiness: Record<string, ReadinessCheck>;
  /**
   * The MCP endpoint's authorization server (built-in provider or external identity provider). Without
   * it (offline unit tests) neither the OAuth server nor the MCP endpoint is mounted.
   */
  oauth?: OauthServer;
  /** The MCP tools; the 14 of spec 4.6 unless a test supplies others. */
  mcpTools?: readonly McpTool[];
  /** `api` serves the REST API and its docs (and the MCP endpoint under /mcp); `mcp` is the MCP listener. */
  surface?: 'api' | 'mcp';
  /** The in-memory search indexes shared by this process's listeners; absent = PostgreSQL finds every query's candidates. */
  searchIndex?: SearchIndex;
  /** Prometheus registry of this process; absent = no /metrics route. */
  metrics?: ApiMetrics;
  /** The extraction processes of this process's dry runs and upload checks (one pool for both listeners). */
  extraction: ExtractionPool;
  /** Free work (dry runs, memory reads) in flight per account in this process. */
  freeWork: FreeWorkLimiter;
};

const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/**
 * JSON bodies read as bytes and decoded strictly: a byte sequence that is not UTF-8 would otherwise
 * become U+FFFD and be stored as if it had been sent. 400 validation_error instead; the rest is
 * Fastify's own parser (prototype poisoning refused).
 */
function strictJsonBodies(app: FastifyInstance) {
  const utf8 = new TextDecoder('utf-8', { fatal: true });
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    let text: string;
    try {
      text = utf8.decode(body as Buffer);
    } catch {
      done(new AppError(400, 'validation_error', 'The request body is not valid UTF-8.'), undefined);
      return;
    }
    parseJson(request, text, done);
  });
}

/** Builds the HTTP API. All dependencies come in; nothing is created here. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Honour a caller's well-formed request id so logs correlate across hops; otherwise make one.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: 1_048_576,
    // A request (headers and body) must arrive whole within this: a client trickling a body, or
    // stopping half-way, does not hold its connection (and the route waiting for the body) for ever.
    requestTimeout: deps.config.requestTimeoutMs,
    // Client addresses (sign-in throttling, registration limits) from X-Forwarded-For only via trusted hops.
    trustProxy: deps.config.trustProxy,
    // Labels travel in paths (peers, sessions); longer segments get 414 in the envelope.
    routerOptions: { maxParamLength: 512 },
    frameworkErrors,
  }).withTypeProvider<ZodTypeProvider>();
  strictJsonBodies(app);
  // What every query of this process shares (its caches), given to the query routes and the MCP tool.
  const query = queryServices(deps.config, deps.searchIndex);

  // Routes declare zod schemas (the type provider); every one also refuses control characters.
  app.setValidatorCompiler((route) => validatorCompiler({ ...route, schema: withoutControlCharacters(route.schema as ZodType) }));
  app.setSerializerCompiler(serializerCompiler);
  // Closing (SIGTERM) ends idle keep-alive connections at once; a request in flight then is answered
  // with `connection: close`, or its connection would hold the close open until the keep-alive ends.
  let closing = false;
  app.addHook('preClose', async () => {
    closing = true;
  });
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
    if (closing) reply.header('connection', 'close');
  });

  await app.register(errorsPlugin);
  if (deps.metrics) await app.register(metricsPlugin, { metrics: deps.metrics, access: deps.config.ops.metrics });
  await app.register(authPlugin, { orm: deps.orm, config: deps.config, rateLimiter: deps.rateLimiter });
  const api = (deps.surface ?? 'api') === 'api';
  // The OpenAPI plugin must see every route registered after it, so it goes first.
  if (api) await app.register(openapiPlugin, { publicBaseUrl: deps.config.publicBaseUrl });
  await app.register(healthRoutes, { checks: deps.readiness });
  if (api) {
    await app.register(authRoutes, { config: deps.config });
    await app.register(cliAuthRoutes, { config: deps.config, rateLimiter: deps.rateLimiter });
    await app.register(apiKeyRoutes);
    await app.register(overviewRoutes);
    await app.register(usageRoutes);
    await app.register(passwordRoutes, { config: deps.config });
    await app.register(deletionRoutes, { config: deps.config, temporal: deps.temporal });
    await app.register(accessRoutes, { ocr: deps.config.ocr });
    for (const mount of [INGEST_API, INGEST_CONSOLE]) {
      await app.register(ingestJobRoutes, mount);
      await app.register(ingestSubmitRoutes, { ...mount, config: deps.config, temporal: deps.temporal, extraction: deps.extraction, freeWork: deps.freeWork });
    }
    await app.register(connectedAppRoutes);
    await app.register(consolePlugin);
    await app.register(queryRoutes, { query });
    for (const mount of [MEMORY_API, MEMORY_CONSOLE]) {
      for (const routes of [memoryLabelRoutes, memoryConversationRoutes, memoryClaimRoutes, memoryEventRoutes]) {
        await app.register(routes, { ...mount, config: deps.config, searchIndex: deps.searchIndex, freeWork: deps.freeWork });
      }
    }
    const provider = deps.oauth?.provider;
    if (provider) {
      await app.register(oauthProviderRoutes, { provider, rateLimiter: deps.rateLimiter });
      await app.register(interactionRoutes, { config: deps.config, provider });
    }
  }
  if (deps.oauth) {
    // {mcp_url} is the MCP listener's root; deployments exposing one port use {PUBLIC_BASE_URL}/mcp.
    const resource = api ? deps.config.mcp.apiMountUrl : deps.config.mcp.publicUrl;
    const options = {
      config: deps.config,
      tools: deps.mcpTools ?? MCP_TOOLS,
      toolDeps: { config: deps.config, searchIndex: deps.searchIndex, freeWork: deps.freeWork, query },
      rateLimiter: deps.rateLimiter,
      resolveOauthToken: deps.oauth.resolveToken,
      authServerMetadata: deps.oauth.metadata,
      resource,
      version: API_DOCUMENT_VERSION,
    };
    await app.register(mcpEndpoint, { ...options, prefix: api ? '/mcp' : '' });
    // RFC 9728 path insertion: the address MCP clients derive first for a resource with a path.
    if (api) app.get('/.well-known/oauth-protected-resource/mcp', { schema: { hide: true } }, async () => protectedResourceMetadata(deps.config, resource));
  }
  return app;
}

/**
 * The MCP listener on MCP_PORT, whose root is {mcp_url}. It shares the API's plugins (errors, request
 * ids, health) so both listeners behave alike; the MCP routes themselves register here.
 */
export async function buildMcpApp(deps: AppDeps): Promise<FastifyInstance> {
  return buildApp({ ...deps, surface: 'mcp' });
}
