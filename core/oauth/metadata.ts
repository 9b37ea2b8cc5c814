import type Provider from 'oidc-provider';
import { AppError } from '../../platform/errors.ts';
import { CLIENT_AUTH_METHODS, GRANT_TYPES, RESPONSE_TYPES, SCOPES_SUPPORTED } from './provider.ts';

/**
 * The authorization server metadata fields (RFC 8414 / OpenID Discovery) an MCP client needs, and the
 * only ones the MCP endpoint republishes at /.well-known/oauth-authorization-server (spec 4.6): an
 * external provider's other fields (its internal endpoints, vendor extensions) are not passed on.
 */
export const METADATA_ALLOWLIST = [
  'issuer',
  'authorization_endpoint',
  'token_endpoint',
  'registration_endpoint',
  'revocation_endpoint',
  'jwks_uri',
  'userinfo_endpoint',
  'scopes_supported',
  'response_types_supported',
  'response_modes_supported',
  'grant_types_supported',
  'code_challenge_methods_supported',
  'token_endpoint_auth_methods_supported',
  'revocation_endpoint_auth_methods_supported',
  'authorization_response_iss_parameter_supported',
  'client_id_metadata_document_supported',
  'service_documentation',
] as const;

export type AuthServerMetadata = Partial<Record<(typeof METADATA_ALLOWLIST)[number], unknown>> & { issuer: string };

export function allowlistMetadata(doc: Record<string, unknown>): AuthServerMetadata {
  return Object.fromEntries(METADATA_ALLOWLIST.filter((k) => doc[k] !== undefined).map((k) => [k, doc[k]])) as AuthServerMetadata;
}

export type MetadataSource = () => Promise<AuthServerMetadata>;

/** The built-in server's metadata, from the provider's own routes (no network hop). */
export function builtinMetadata(provider: Provider): MetadataSource {
  const doc = allowlistMetadata({
    issuer: provider.issuer,
    authorization_endpoint: provider.urlFor('authorization'),
    token_endpoint: provider.urlFor('token'),
    registration_endpoint: provider.urlFor('registration'),
    revocation_endpoint: provider.urlFor('revocation'),
    jwks_uri: provider.urlFor('jwks'),
    userinfo_endpoint: provider.urlFor('userinfo'),
    scopes_supported: SCOPES_SUPPORTED,
    response_types_supported: RESPONSE_TYPES,
    response_modes_supported: ['query'],
    grant_types_supported: GRANT_TYPES,
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    revocation_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    authorization_response_iss_parameter_supported: true,
  });
  return async () => doc;
}

/** Where RFC 8414 and OpenID Discovery put an issuer's metadata, in the order clients try them. */
export function discoveryUrls(issuer: string): string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

const CACHE_MS = 5 * 60_000;

/**
 * An external identity provider's metadata: fetched from its discovery document, checked (the issuer
 * must be the configured one, RFC 8414 section 3.3), allowlisted and cached for five minutes. If it
 * cannot be had, 503 (and the next request tries again).
 */
export function externalMetadata(issuer: string, fetchFn: typeof fetch = fetch): MetadataSource {
  let cached: { doc: AuthServerMetadata; at: number } | undefined;
  return async () => {
    if (cached && Date.now() - cached.at < CACHE_MS) return cached.doc;
    for (const url of discoveryUrls(issuer)) {
      const res = await fetchFn(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      if (!res?.ok) continue;
      const doc = (await res.json().catch(() => undefined)) as Record<string, unknown> | undefined;
      if (!doc || doc.issuer !== issuer) continue;
      cached = { doc: allowlistMetadata(doc), at: Date.now() };
      return cached.doc;
    }
    throw new AppError(503, 'service_unavailable', 'The identity provider\'s metadata is unavailable.');
  };
}
