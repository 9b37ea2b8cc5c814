import type { EntityManager } from '@mikro-orm/postgresql';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import type { z } from 'zod';
import type { Principal } from '../../../shared/auth/principal.ts';
import type { SearchIndex } from '../../../shared/retrieval/search-index.ts';
import type { Config } from '../../../shared/config.ts';
import type { Scope } from '../../../shared/contracts/account.ts';
import { AppError } from '../../../shared/errors.ts';
import type { TemporalClientHandle } from '../../../shared/temporal/client.ts';

/** What a tool's domain function may need besides the caller and its EntityManager. */
export type ToolDeps = { config: Config; temporal: TemporalClientHandle; searchIndex?: SearchIndex };

/** One tool call's context: the request's authenticated principal and its own EntityManager fork. */
export type ToolContext = { principal: Principal; em: EntityManager; deps: ToolDeps; log: FastifyBaseLogger };

/** A tool's answer: structured data, and optionally a text form written for a model (else the JSON). */
export type ToolOutcome = { data: Record<string, unknown>; text?: string };

/**
 * One MCP tool: a thin adapter from a zod-validated input to a domain function taking
 * (principal, em/deps, input). The registry checks scopes before `run` and turns errors into tool
 * errors, so a tool body contains no authorization or error plumbing.
 */
export type McpTool<I extends z.ZodObject = z.ZodObject> = {
  name: string;
  title: string;
  /** Written for a model: what the tool does, when to use it, what comes back. */
  description: string;
  input: I;
  /** Scopes the call needs (spec 4.6); a function when they depend on the input (answer mode). */
  scopes: readonly Scope[] | ((input: z.infer<I>) => readonly Scope[]);
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  run(ctx: ToolContext, input: z.infer<I>): Promise<ToolOutcome>;
};

export const defineTool = <I extends z.ZodObject>(tool: McpTool<I>): McpTool<I> => tool;

function toolError(code: string, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }], structuredContent: { error: { code, message } } };
}

export function missingScopes(principal: Principal, needed: readonly Scope[]): Scope[] {
  return needed.filter((s) => !principal.scopes.includes(s));
}

/** Runs one tool call: scopes first (a missing scope is a tool error, never data), then the tool. */
export async function callTool<I extends z.ZodObject>(tool: McpTool<I>, ctx: ToolContext, input: z.infer<I>): Promise<CallToolResult> {
  const needed = typeof tool.scopes === 'function' ? tool.scopes(input) : tool.scopes;
  const missing = missingScopes(ctx.principal, needed);
  if (missing.length) {
    const code = missing.includes('query.answer') ? 'query_answer_not_authorized' : 'forbidden';
    return toolError(code, `This credential lacks the scope ${missing.join(', ')} needed by ${tool.name}.`);
  }
  try {
    const outcome = await tool.run(ctx, input);
    return {
      content: [{ type: 'text', text: outcome.text ?? JSON.stringify(outcome.data, null, 2) }],
      structuredContent: outcome.data,
    };
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return toolError(err.code, err.message);
    ctx.log.error({ err, tool: tool.name }, 'MCP tool failed');
    if (err instanceof AppError) return toolError(err.code, err.message);
    return toolError('internal_error', 'The tool failed unexpectedly; try again later.');
  }
}

/** Registers the tools on a (per-request) server, bound to that request's context. */
export function registerTools(server: McpServer, tools: readonly McpTool[], ctx: ToolContext): void {
  for (const tool of tools) {
    server.registerTool(
      tool.name,
      { title: tool.title, description: tool.description, inputSchema: tool.input, annotations: { openWorldHint: false, ...tool.annotations } },
      ((input: Record<string, unknown>) => callTool(tool, ctx, input)) as never,
    );
  }
}
