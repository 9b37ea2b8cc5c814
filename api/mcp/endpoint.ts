import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../../platform/config.ts';
import { accountHome, HOME_HEADER } from '../../platform/net/affinity.ts';
import { mapError } from '../plugins/errors.ts';
import { CONNECTED_APP_SCOPES } from '../../core/contracts/oauth.ts';
import type { MetadataSource } from '../../core/oauth/metadata.ts';
import type { RateLimiter } from '../../core/metering/rate-limit.ts';
import type { OauthTokenResolver } from '../../core/oauth/server.ts';
import { authenticateMcp, requestGuard } from './authenticate.ts';
import {
  McpHttpError,
  PREFERRED_PROTOCOL_VERSION,
  checkAccept,
  checkVersionHeader,
  decodeJsonBody,
  negotiate,
  parseMessage,
  rpcErrorBody,
} from './protocol.ts';
import { createMcpServer } from './server.ts';
import type { McpTool, ToolDeps } from './tools/registry.ts';

/** A tools/call naming a progressToken. */
const wantsProgress = (message: unknown) => {
  const m = message as { method?: unknown; params?: { _meta?: { progressToken?: unknown } } };
  return m.method === 'tools/call' && m.params?._meta?.progressToken !== undefined;
};

export type McpEndpointOptions = {
  config: Config;
  tools: readonly McpTool[];
  toolDeps: ToolDeps;
  rateLimiter?: RateLimiter;
  resolveOauthToken: OauthTokenResolver;
  authServerMetadata: MetadataSource;
  /** This mount's public address: the RFC 9728 `resource` (the MCP listener's root, or {PUBLIC_BASE_URL}/mcp). */
  resource: string;
  version: string;
};

/** The MCP endpoint's protected-resource metadata lives at {mount}/.well-known/oauth-protected-resource. */
export const resourceMetadataUrl = (resource: string) => new URL('.well-known/oauth-protected-resource', resource.endsWith('/') ? resource : `${resource}/`).href;

/**
 * RFC 9728 protected-resource metadata of one mount of the MCP endpoint. With the built-in server it
 * lists the scopes an MCP client should request (clients send none when none are listed); an external
 * identity provider's scope names are its own, so none are listed for it.
 */
export const protectedResourceMetadata = (config: Config, resource: string) => ({
  resource,
  authorization_servers: [config.oauth.issuer],
  ...(config.oauth.mode === 'builtin' ? { scopes_supported: [...CONNECTED_APP_SCOPES] } : {}),
  bearer_methods_supported: ['header'],
  resource_name: 'Cairn MCP',
  resource_documentation: `${config.publicBaseUrl}/docs`,
});

const first = (h: string | string[] | undefined) => (Array.isArray(h) ? h[0] : h);

/** An error as a JSON-RPC error body, with the status and code the error handler maps it to. */
function sendRpcError(err: unknown, request: FastifyRequest, reply: FastifyReply) {
  const mapped = mapError(err);
  if (mapped.level === 'error') request.log.error({ err }, 'MCP request failed');
  else request.log[mapped.level]({ code: mapped.code, status: mapped.status }, mapped.message);
  if (mapped.headers) reply.headers(mapped.headers);
  const rpcCode = err instanceof McpHttpError ? err.rpcCode : -32000;
  return reply
    .code(mapped.status)
    .header('mcp-protocol-version', PREFERRED_PROTOCOL_VERSION)
    .type('application/json; charset=utf-8')
    .send(rpcErrorBody({ message: mapped.message, code: String(mapped.code), rpcCode }, request.id));
}

/**
 * CORS for browser-based MCP clients: metadata is public; the endpoint itself answers only origins that
 * pass the Origin rule (the same check as rule 1), and exposes the headers a client must read.
 */
function corsHeaders(guard: ReturnType<typeof requestGuard>) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const origin = first(request.headers.origin);
    if (origin === undefined) return;
    if (request.url.includes('/.well-known/')) {
      reply.header('access-control-allow-origin', '*');
      return;
    }
    if (guard.originAllowed(origin)) {
      reply
        .header('access-control-allow-origin', origin)
        .header('vary', 'Origin')
        .header('access-control-expose-headers', 'mcp-protocol-version, www-authenticate, retry-after');
    }
  };
}

/**
 * The hosted MCP endpoint (spec 2.5, 4.6), mounted at the MCP listener's root and under /mcp on the
 * API port: discovery metadata, GET/DELETE 405, and POST, one stateless Streamable HTTP message per
 * request through the MCP SDK (a fresh server and transport each time, JSON responses). The checks
 * before the SDK run in a fixed order: Host and Origin (403), credential (401), Accept (406), media type (415),
 * envelope and version (400), rate limit (429).
 */
export async function mcpEndpoint(app: FastifyInstance, opts: McpEndpointOptions): Promise<void> {
  const metadataUrl = resourceMetadataUrl(opts.resource);
  const guard = requestGuard(opts.config);
  const checkHostAndOrigin = (request: FastifyRequest) => guard.check(first(request.headers.host), first(request.headers.origin));

  // The body is read as bytes and judged here (rules 4 and 2.5), not by Fastify's JSON parser.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: 1_048_576 }, (_req, body, done) => done(null, body));

  app.setErrorHandler(sendRpcError);
  app.addHook('onRequest', corsHeaders(guard));

  const hide = { schema: { hide: true } };
  app.options('/', hide, async (request, reply) => {
    checkHostAndOrigin(request);
    return reply
      .code(204)
      .header('access-control-allow-methods', 'POST')
      .header('access-control-allow-headers', 'authorization, content-type, accept, mcp-protocol-version')
      .header('access-control-max-age', '600')
      .send();
  });
  app.get('/.well-known/oauth-protected-resource', hide, async () => protectedResourceMetadata(opts.config, opts.resource));
  app.get('/.well-known/oauth-authorization-server', hide, async () => opts.authServerMetadata());

  const authenticate = async (request: FastifyRequest, reply: FastifyReply) => {
    const principal = await authenticateMcp(request, { resolveOauthToken: opts.resolveOauthToken, resourceMetadataUrl: metadataUrl });
    reply.header(HOME_HEADER, accountHome(principal.accountId));
    return principal;
  };

  // No server-initiated stream is offered: GET (and DELETE, there being no sessions) are 405.
  const notAllowed = async (request: FastifyRequest, reply: FastifyReply) => {
    checkHostAndOrigin(request);
    await authenticate(request, reply);
    return reply
      .code(405)
      .header('allow', 'POST')
      .header('mcp-protocol-version', PREFERRED_PROTOCOL_VERSION)
      .type('application/json; charset=utf-8')
      .send(rpcErrorBody({ message: 'Use POST: this endpoint offers no event stream.', code: 'method_not_allowed', rpcCode: -32000 }, request.id));
  };
  app.get('/', hide, notAllowed);
  app.delete('/', hide, notAllowed);

  app.post('/', hide, async (request, reply) => {
    checkHostAndOrigin(request);
    const principal = await authenticate(request, reply);
    checkAccept(first(request.headers.accept));
    const text = decodeJsonBody(first(request.headers['content-type']), (request.body as Buffer | undefined) ?? Buffer.alloc(0));
    const header = first(request.headers['mcp-protocol-version']);
    checkVersionHeader(header);
    const { message, version } = negotiate(parseMessage(text), header);
    // Product requests share the account-wide window (spec 5 rule 5), counted once the request is valid.
    if (opts.rateLimiter) await opts.rateLimiter.consume(principal.accountId);

    const server = createMcpServer(opts.tools, { principal, em: request.em, deps: opts.toolDeps, log: request.log, requestId: request.id }, opts.version);
    // JSON, except for a tools/call asking for progress: its response is an event stream carrying the
    // progress notifications, then the result (buffered here: the stream ends with the request).
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: !wantsProgress(message) });
    transport.onerror = (err) => request.log.debug({ err }, 'MCP transport refused a message');
    try {
      await server.connect(transport);
      const response = await transport.handleRequest(
        new Request(new URL(request.url, 'http://mcp.invalid'), {
          method: 'POST',
          headers: {
            accept: 'application/json, text/event-stream',
            'content-type': 'application/json',
            'mcp-protocol-version': version,
          },
        }),
        { parsedBody: message },
      );
      const body = await response.text();
      reply.code(response.status).header('mcp-protocol-version', version);
      if (!body) return reply.send();
      return reply.type(response.headers.get('content-type') ?? 'application/json').send(body);
    } finally {
      await server.close();
    }
  });
}
