import type { FastifyRequest } from 'fastify';
import type { Principal } from '../../shared/auth/principal.ts';
import { resolveApiKey } from '../../shared/auth/resolve.ts';
import { API_KEY_PREFIX } from '../../shared/auth/tokens.ts';
import type { Config } from '../../shared/config.ts';
import type { OauthTokenResolver } from '../../shared/oauth/server.ts';
import { McpHttpError } from './protocol.ts';

const LOCALHOST = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;

/**
 * Rule 1: an Origin, when present, must be a canonical service origin (DNS-rebinding and cross-site
 * protection); other localhost origins only when the operator runs a local development server.
 */
export function checkOrigin(origin: string | undefined, mcp: Config['mcp']): void {
  if (origin !== undefined && !isAllowedOrigin(origin, mcp)) {
    throw new McpHttpError(403, 'forbidden', 'This Origin may not call the MCP endpoint.');
  }
}

export function isAllowedOrigin(origin: string, mcp: Config['mcp']): boolean {
  return mcp.allowedOrigins.includes(origin) || (mcp.localDevOrigins && LOCALHOST.test(origin));
}

/**
 * Rule 5: every request is authenticated on its own, with an API key or an MCP OAuth access token.
 * A failure is 401 with the RFC 9728 challenge pointing at the protected-resource metadata.
 */
export async function authenticateMcp(
  request: FastifyRequest,
  opts: { resolveOauthToken: OauthTokenResolver; resourceMetadataUrl: string },
): Promise<Principal> {
  const challenge = (error?: string) =>
    `Bearer resource_metadata="${opts.resourceMetadataUrl}"${error ? `, error="${error}"` : ''}`;
  const refuse = (message: string, error?: string) =>
    new McpHttpError(401, 'unauthorized', message, undefined, { 'www-authenticate': challenge(error) });

  const header = request.headers.authorization;
  if (header === undefined) throw refuse('A credential is required: an API key or an MCP OAuth access token.');
  const match = /^Bearer ([A-Za-z0-9._~+/=-]{1,2048})$/i.exec(header);
  if (!match) throw refuse('Malformed Authorization header; use "Bearer <credential>".', 'invalid_request');
  const onError = (err: unknown) => request.log.warn({ err }, 'credential last-used update failed');
  const value = match[1]!;
  const principal = value.startsWith(API_KEY_PREFIX)
    ? await resolveApiKey(request.em, value, onError)
    : await opts.resolveOauthToken(request.em, value, onError);
  if (!principal || principal.accountState !== 'active') {
    throw refuse('The credential is missing, malformed, expired or revoked.', 'invalid_token');
  }
  return principal;
}
