import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FastifyInstance } from 'fastify';
import { buildApp, buildMcpApp } from '../../api/app.ts';
import type { McpTool } from '../../api/mcp/tools/registry.ts';
import { loadConfig, type Config } from '../../platform/config.ts';
import { pingDatabase, type Orm } from '../../platform/db/orm.ts';
import { freePort } from './ephemeral.ts';
import type { Logger } from '../../platform/logger.ts';
import type { RateLimiter } from '../../core/metering/rate-limit.ts';
import { extractionPoolFor } from '../../core/ingest/extraction/pool.ts';
import { createOauthServer } from '../../core/oauth/server.ts';
import { createFreeWorkLimiter } from '../../platform/ops/free-work.ts';
import type { TemporalClientHandle } from '../../temporal/client.ts';
import { searchIndexFor } from '../../core/retrieval/search-index.ts';
import { memoryRows } from './memory-rows.ts';
import { memoryLogger } from './services.ts';

export type McpStack = {
  config: Config;
  /** The API ({base_url}), which also serves the authorization server at /oauth and MCP at /mcp. */
  baseUrl: string;
  /** The MCP listener's root ({mcp_url}), with its trailing slash. */
  mcpUrl: string;
  api: FastifyInstance;
  mcp: FastifyInstance;
  close(): Promise<void>;
};

/**
 * The API and the MCP listener wired as bin/api.ts wires them, on ports chosen before the apps are
 * built (the authorization server's issuer and the MCP resource are fixed at construction).
 */
export async function startMcpStack(opts: {
  orm: Orm;
  temporal: TemporalClientHandle;
  env?: NodeJS.ProcessEnv;
  tools?: readonly McpTool[];
  rateLimiter?: RateLimiter;
  logger?: Logger;
  taskQueue?: string;
}): Promise<McpStack> {
  const [port, mcpPort] = [await freePort(), await freePort()];
  const config = loadConfig({
    PORT: String(port),
    MCP_PORT: String(mcpPort),
    TEMPORAL_TASK_QUEUE: opts.taskQueue ?? 'unused',
    ...opts.env,
  });
  const logger = opts.logger ?? memoryLogger().logger;
  const oauth = await createOauthServer({ config, orm: opts.orm });
  const extraction = extractionPoolFor(config);
  const deps = {
    config,
    logger,
    orm: opts.orm,
    temporal: opts.temporal,
    oauth,
    rateLimiter: opts.rateLimiter,
    searchIndex: searchIndexFor(config, opts.orm, logger),
    ...(opts.tools ? { mcpTools: opts.tools } : {}),
    readiness: { postgres: () => pingDatabase(opts.orm), temporal: () => opts.temporal.ping() },
    extraction,
    freeWork: createFreeWorkLimiter(config.freeWorkPerAccount),
  };
  const api = await buildApp(deps);
  const mcp = await buildMcpApp(deps);
  await api.listen({ host: '127.0.0.1', port });
  await mcp.listen({ host: '127.0.0.1', port: mcpPort });
  return {
    config,
    baseUrl: config.publicBaseUrl,
    mcpUrl: config.mcp.publicUrl,
    api,
    mcp,
    async close() {
      await Promise.allSettled([api.close(), mcp.close()]);
      await extraction.close();
    },
  };
}

/** The MCP SDK's own client over Streamable HTTP, authenticated with a bearer (API key or OAuth token). */
export async function connectMcp(url: string, bearer: string, name = 'cairn-test'): Promise<Client> {
  const client = new Client({ name, version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  return client;
}

/** Dana's ferry trip as memory rows of one account: peer dana, session trip, one message and one claim. */
export async function seedDanaTrip(orm: Orm, accountId: string): Promise<{ claimId: string }> {
  const mem = memoryRows(orm);
  const peer = await mem.peer(accountId, 'dana');
  const session = await mem.session(accountId, 'trip');
  await mem.message(accountId, { peerId: peer, sessionId: session, content: 'Dana booked the ferry to Skarholm for the ninth of June.' });
  return { claimId: await mem.claim(accountId, { peerId: peer, sessionId: session, content: 'Dana travels to Skarholm by ferry.' }) };
}
