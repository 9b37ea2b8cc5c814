import { MEMORY_TOOLS } from './memory.ts';
import { queryContextTool } from './query.ts';
import type { McpTool } from './registry.ts';

/**
 * The tools of spec 4.6, one module per group, each a thin adapter over the domain function the REST
 * route calls.
 */
export const MCP_TOOLS: readonly McpTool[] = [
  queryContextTool as unknown as McpTool,
  ...MEMORY_TOOLS,
];
