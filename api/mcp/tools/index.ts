import { queryContextTool } from './query.ts';
import type { McpTool } from './registry.ts';

/**
 * The tools of spec 4.6, one module per group, each a thin adapter over the domain function the REST
 * route calls. They land with the native memory and query domain functions.
 */
export const MCP_TOOLS: readonly McpTool[] = [
  queryContextTool as unknown as McpTool,
];
