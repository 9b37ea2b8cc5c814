import type { FastifyRequest } from 'fastify';
import ipaddr from 'ipaddr.js';
import type { Principal } from '../../core/auth/principal.ts';
import { resolveApiKey } from '../../core/auth/resolve.ts';
import { API_KEY_PREFIX } from '../../core/contracts/auth.ts';
import type { Config } from '../../platform/config.ts';
import type { OauthTokenResolver } from '../../core/oauth/server.ts';
import { McpHttpError } from './protocol.ts';

const LOOPBACK_NAMES = ['localhost', '127.0.0.1', '[::1]'];
const LOOPBACK_ORIGIN = /^https?:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d{1,5})?$/i;
/** A Host header: a DNS name, an IPv4 address or a bracketed IPv6 address, and an optional port. */
const HOST_HEADER = /^(\[[0-9a-f:.]+\]|[a-z0-9.-]+)(?::\d{1,5})?$/i;

/** Whether the listeners are bound to loopback only (HOST), so that only this machine reaches them. */
export function isLoopbackBind(host: string): boolean {
  return host === 'localhost' || (ipaddr.isValid(host) && ipaddr.process(host).range() === 'loopback');
}

/**
 * Rule 1 and the MCP security guidance against DNS rebinding: the Host header must name the service
 * (the host of PUBLIC_BASE_URL or MCP_PUBLIC_URL, any port), and an Origin, when present, must be a
 * canonical service origin. When the listeners are bound to loopback, the loopback names (localhost,
 * 127.0.0.1, [::1]) are the service too, as Host and as Origin on any port (a local development
 * server, spec 4.6 rule 1); MCP_LOCAL_DEV_ORIGINS admits loopback Origins on other bindings.
 */
export function requestGuard(config: Pick<Config, 'host' | 'publicBaseUrl' | 'mcp'>) {
  const loopback = isLoopbackBind(config.host);
  const hostnames = new Set([new URL(config.publicBaseUrl).hostname, new URL(config.mcp.publicUrl).hostname]);
  if (loopback) for (const name of LOOPBACK_NAMES) hostnames.add(name);
  const localOrigins = loopback || config.mcp.localDevOrigins;
  const originAllowed = (origin: string) => config.mcp.allowedOrigins.includes(origin) || (localOrigins && LOOPBACK_ORIGIN.test(origin));
  const hostAllowed = (host: string | undefined) => {
    const match = host === undefined ? null : HOST_HEADER.exec(host);
    return match !== null && hostnames.has(match[1]!.toLowerCase());
  };
  return {
    originAllowed,
    check(host: string | undefined, origin: string | undefined): void {
      if (!hostAllowed(host)) throw new McpHttpError(403, 'forbidden', 'This Host may not call the MCP endpoint.');
      if (origin !== undefined && !originAllowed(origin)) {
        throw new McpHttpError(403, 'forbidden', 'This Origin may not call the MCP endpoint.');
      }
    },
  };
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
    new McpHttpError(401, 'unauthorized', message, { headers: { 'www-authenticate': challenge(error) } });

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
