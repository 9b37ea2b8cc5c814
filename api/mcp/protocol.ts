import { JSONRPCMessageSchema, isInitializeRequest, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { AppError, type ErrorCode } from '../../platform/errors.ts';

/** MCP protocol versions this endpoint speaks (spec 4.6 rule 2, 9), preferred first. */
export const MCP_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18'] as const;
export const PREFERRED_PROTOCOL_VERSION = MCP_PROTOCOL_VERSIONS[0];

const JSON_RPC = { parse: -32700, invalidRequest: -32600, server: -32000 } as const;

/**
 * A refusal at the HTTP level of the MCP endpoint (spec 4.6 rule 4). The body is a JSON-RPC error
 * response with id null (2.5: code integer, message string, data) whose data carries the service's
 * stable error code and the request id, so MCP clients and people reading logs both get what they need.
 */
export class McpHttpError extends AppError {
  readonly rpcCode: number;
  constructor(status: number, code: ErrorCode, message: string, opts: { rpcCode?: number; headers?: Record<string, string> } = {}) {
    super(status, code, message, opts.headers ?? {});
    this.rpcCode = opts.rpcCode ?? JSON_RPC.server;
  }
}

export function rpcErrorBody(err: { message: string; code: string; rpcCode: number }, requestId: string) {
  return { jsonrpc: '2.0' as const, id: null, error: { code: err.rpcCode, message: err.message, data: { code: err.code, requestId } } };
}

const invalid = (message: string, rpcCode: number = JSON_RPC.invalidRequest) =>
  new McpHttpError(400, 'validation_error', message, { rpcCode });

/** Rule 1: Accept must list both application/json and text/event-stream (or a wildcard covering them). */
export function checkAccept(accept: string | undefined): void {
  const types = (accept ?? '')
    .split(',')
    .map((part) => part.split(';')[0]!.trim().toLowerCase())
    .filter(Boolean);
  const admits = (type: string) => types.some((t) => t === type || t === '*/*' || t === `${type.split('/')[0]}/*`);
  if (!admits('application/json') || !admits('text/event-stream')) {
    throw new McpHttpError(406, 'validation_error', 'Accept must include both application/json and text/event-stream.');
  }
}

/**
 * Rule 4 (415): the body must be UTF-8 application/json: the media type exactly, an absent or utf-8
 * charset, and bytes that decode as UTF-8. Returns the decoded text.
 */
export function decodeJsonBody(contentType: string | undefined, body: Buffer): string {
  const [type, ...params] = (contentType ?? '').split(';').map((s) => s.trim().toLowerCase());
  const charset = params.find((p) => p.startsWith('charset='))?.slice('charset='.length).replace(/"/g, '');
  if (type !== 'application/json' || (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8')) {
    throw new McpHttpError(415, 'unsupported_media_type', 'The body must be UTF-8 application/json.');
  }
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(body);
  } catch {
    throw new McpHttpError(415, 'unsupported_media_type', 'The body is not valid UTF-8.');
  }
}

/**
 * Rules 2.5 and 4 (400): one JSON-RPC 2.0 message, never a batch array. Requests need a string or
 * integer id; null is admitted only in an error response (which the SDK's schema spells as no id).
 */
export function parseMessage(text: string): JSONRPCMessage {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    throw invalid('The body is not valid JSON.', JSON_RPC.parse);
  }
  if (Array.isArray(raw)) throw invalid('Batch arrays are not supported; send one JSON-RPC message per request.');
  if (raw && typeof raw === 'object' && 'error' in raw && (raw as { id?: unknown }).id === null) {
    const { id: _null, ...rest } = raw as Record<string, unknown>;
    raw = rest;
  }
  const parsed = JSONRPCMessageSchema.safeParse(raw);
  if (!parsed.success) throw invalid('The body is not a valid JSON-RPC 2.0 message.');
  return parsed.data;
}

/** Rule 4 (400): an MCP-Protocol-Version header, when sent, must name a supported version. */
export function checkVersionHeader(header: string | undefined): void {
  if (header !== undefined && !(MCP_PROTOCOL_VERSIONS as readonly string[]).includes(header)) {
    throw invalid(`Unsupported MCP-Protocol-Version ${JSON.stringify(header).slice(0, 40)}; supported: ${MCP_PROTOCOL_VERSIONS.join(', ')}.`);
  }
}

/**
 * Version negotiation on initialize (rule 2): a supported requested version is kept, anything else is
 * answered with the preferred one (the client then decides whether it can continue). Returns the
 * message to dispatch and the version the response will carry.
 */
export function negotiate(message: JSONRPCMessage, header: string | undefined): { message: JSONRPCMessage; version: string } {
  if (isInitializeRequest(message)) {
    const requested = message.params.protocolVersion;
    const version = (MCP_PROTOCOL_VERSIONS as readonly string[]).includes(requested) ? requested : PREFERRED_PROTOCOL_VERSION;
    return { message: { ...message, params: { ...message.params, protocolVersion: version } }, version };
  }
  // After initialize clients send the negotiated version; a client that omits it gets the preferred one.
  return { message, version: header ?? PREFERRED_PROTOCOL_VERSION };
}
