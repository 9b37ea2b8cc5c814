import type { FastifyInstance } from 'fastify';
import { buildApp, type AppDeps } from '../app.ts';

/**
 * The MCP listener on MCP_PORT, whose root is {mcp_url}. It shares the API's plugins (errors, request
 * ids, health) so both listeners behave alike; the MCP routes themselves register here.
 */
export async function buildMcpApp(deps: AppDeps): Promise<FastifyInstance> {
  return buildApp({ ...deps, surface: 'mcp' });
}
