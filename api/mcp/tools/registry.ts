import type { EntityManager } from '@mikro-orm/postgresql';
import type { CallToolResult, Tool } from '@modelcontextprotocol/sdk/types.js';
import type { FastifyBaseLogger } from 'fastify';
import { z } from 'zod';
import type { Principal } from '../../../core/auth/principal.ts';
import type { QueryServices } from '../../../core/query/run.ts';
import type { SearchIndex } from '../../../core/retrieval/search-index.ts';
import type { Config } from '../../../platform/config.ts';
import type { FreeWorkLimiter } from '../../../platform/ops/free-work.ts';
import type { Scope } from '../../../core/contracts/account.ts';
import { CONTROL_CHARACTER_MESSAGE, controlCharacterPath } from '../../../core/contracts/common.ts';
import { AppError, type ErrorCode } from '../../../platform/errors.ts';
import { toolJsonSchema } from './json-schema.ts';

/** What a tool's domain function may need besides the caller and its EntityManager. */
export type ToolDeps = { config: Config; searchIndex?: SearchIndex; freeWork: FreeWorkLimiter; query: QueryServices };

/** One tool call's context: the request's authenticated principal, its own EntityManager fork and its request id. */
export type ToolContext = {
  principal: Principal;
  em: EntityManager;
  deps: ToolDeps;
  log: FastifyBaseLogger;
  requestId: string;
  /** Present when the caller asked for progress (a progressToken): notifications/progress on its response stream. */
  progress?: (progress: number, total: number, message: string) => Promise<void>;
};

/** A tool's answer: structured data, and optionally a text form written for a model (else the JSON). */
export type ToolOutcome<D = Record<string, unknown>> = { data: D; text?: string };

/**
 * One MCP tool: a thin adapter from a zod-validated input to a domain function taking
 * (principal, em/deps, input). The registry validates the arguments, checks scopes before `run`,
 * shapes the result by `output` and turns errors into tool errors, so a tool body contains no
 * validation, authorization or error plumbing.
 */
export type McpTool<I extends z.ZodObject = z.ZodObject, O extends z.ZodObject = z.ZodObject> = {
  name: string;
  title: string;
  /** Written for a model: what the tool does, when to use it, what comes back. */
  description: string;
  input: I;
  /**
   * The tool's structuredContent (its outputSchema): a result is parsed through it before it is sent,
   * like a REST response through its response schema, so what is sent always satisfies the schema.
   */
  output: O;
  /**
   * Scopes the call needs (spec 4.6); a function when they depend on the input (answer mode) or on
   * what the credential holds (query_context searches native memory alone without query).
   */
  scopes: readonly Scope[] | ((input: z.infer<I>, principal: Principal) => readonly Scope[]);
  /**
   * Who tools/list offers the tool to: a credential holding every scope of one of these sets. Omitted,
   * the static `scopes`; a tool with `scopes` as a function names its sets here.
   */
  offeredTo?: (principal: Principal) => readonly (readonly Scope[])[];
  annotations: { readOnlyHint: boolean; destructiveHint?: boolean; idempotentHint?: boolean };
  run(ctx: ToolContext, input: z.infer<I>): Promise<ToolOutcome<z.input<O>>>;
};

export const defineTool = <I extends z.ZodObject, O extends z.ZodObject>(tool: McpTool<I, O>): McpTool<I, O> => tool;

/** zod issues as one line a caller (or a model) can act on: `path: message; …`. */
export const issuesText = (error: z.ZodError) =>
  error.issues.map((i) => `${i.path.join('.') || 'arguments'}: ${i.message}`).join('; ');

/** structuredContent of a tool error: the service's stable error code (section 7) and a message. */
const ToolErrorContent = z.strictObject({
  error: z.strictObject({ code: z.string().describe('Stable error code, as in the REST error envelope.'), message: z.string() }),
});

/** A tool error (spec 4.6): isError with the stable code in structuredContent.error, never data. */
function toolError(code: ErrorCode, message: string): CallToolResult {
  return { isError: true, content: [{ type: 'text', text: `${code}: ${message}` }], structuredContent: { error: { code, message } } };
}

export function missingScopes(principal: Principal, needed: readonly Scope[]): Scope[] {
  return needed.filter((s) => !principal.scopes.includes(s));
}

/**
 * Runs one tools/call: the arguments are validated (invalid ones, and text with control characters, are a tool error the model can
 * correct, as MCP 2025-11-25 asks, not a protocol error), then scopes (a missing scope is a tool error,
 * never data), then the tool, whose data is shaped by its output schema.
 */
export async function callTool(tool: McpTool, ctx: ToolContext, args: unknown): Promise<CallToolResult> {
  const parsed = tool.input.safeParse(args ?? {});
  if (!parsed.success) return toolError('validation_error', `Invalid arguments for ${tool.name}: ${issuesText(parsed.error)}`);
  const input = parsed.data;
  const bad = controlCharacterPath(input);
  if (bad) return toolError('validation_error', `${bad.join('.') || 'input'} ${CONTROL_CHARACTER_MESSAGE}.`);
  const needed = typeof tool.scopes === 'function' ? tool.scopes(input, ctx.principal) : tool.scopes;
  const missing = missingScopes(ctx.principal, needed);
  if (missing.length) {
    const code = missing.includes('query.answer') ? 'query_answer_not_authorized' : 'forbidden';
    return toolError(code, `This credential lacks the scope ${missing.join(', ')} needed by ${tool.name}.`);
  }
  let outcome: ToolOutcome<unknown>;
  try {
    await ctx.progress?.(0, 1, `${tool.name} started`);
    outcome = await tool.run(ctx, input);
    await ctx.progress?.(1, 1, `${tool.name} done`);
  } catch (err) {
    if (err instanceof AppError && err.status < 500) return toolError(err.code, err.message);
    ctx.log.error({ err, tool: tool.name }, 'MCP tool failed');
    if (err instanceof AppError) return toolError(err.code, err.message);
    return toolError('internal_error', 'The tool failed unexpectedly; try again later.');
  }
  const data = tool.output.safeParse(outcome.data);
  if (!data.success) {
    ctx.log.error({ tool: tool.name, issues: issuesText(data.error) }, 'MCP tool result does not match its output schema');
    return toolError('internal_error', 'The tool failed unexpectedly; try again later.');
  }
  return {
    content: [{ type: 'text', text: outcome.text ?? JSON.stringify(data.data, null, 2) }],
    structuredContent: data.data,
  };
}

/** A tools/call naming no tool of this server: a tool error too (what MCP clients and the SDK expect). */
export const unknownTool = (name: string) => toolError('not_found', `There is no tool named ${JSON.stringify(name.slice(0, 100))}.`);

/**
 * The tools a credential can call, which is what tools/list shows it: a read-only token is not
 * offered write tools it would only be refused.
 */
export function callableTools(tools: readonly McpTool[], principal: Principal): McpTool[] {
  return tools.filter((tool) => {
    const sets = tool.offeredTo?.(principal) ?? (typeof tool.scopes === 'function' ? [] : [tool.scopes]);
    return sets.some((set) => set.every((s) => principal.scopes.includes(s)));
  });
}

const listings = new WeakMap<McpTool, Tool>();

/**
 * A tool's outputSchema admits its data and the tool-error envelope: clients validate every
 * structuredContent against it, errors included (the MCP SDK's client does, up to at least 1.32.2:
 * typescript-sdk#1943), so a schema of the data alone would turn each tool error into a client-side
 * protocol error.
 */
const outputSchema = (output: z.ZodObject) => ({
  type: 'object' as const,
  description: 'The result, or on a tool error (isError: true) the error.',
  anyOf: [toolJsonSchema(output, 'output'), toolJsonSchema(ToolErrorContent, 'output')],
});

/** tools/list: the definitions, each converted to JSON Schema once (not on every request). */
export function toolListing(tools: readonly McpTool[]): Tool[] {
  return tools.map((tool) => {
    let listing = listings.get(tool);
    if (!listing) {
      listing = {
        name: tool.name,
        title: tool.title,
        description: tool.description,
        inputSchema: toolJsonSchema(tool.input, 'input'),
        outputSchema: outputSchema(tool.output),
        annotations: { openWorldHint: false, ...tool.annotations },
      };
      listings.set(tool, listing);
    }
    return listing;
  });
}
