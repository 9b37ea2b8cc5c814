import type { EntityManager } from '@mikro-orm/postgresql';
import Provider, { errors, interactionPolicy, type Configuration, type KoaContextWithOIDC } from 'oidc-provider';
import type { Config } from '../../platform/config.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { safeFetch } from '../../platform/net/safe-fetch.ts';
import { activeAccount } from './accounts.queries.ts';
import { PostgresOauthAdapter } from './adapter.ts';
import { CONNECTED_APP_SCOPES } from '../contracts/oauth.ts';
import { connectApplication, connectedAppScopes } from './connected-apps.ts';
import { loadOauthSecrets, type OauthSecrets } from './secrets.ts';

/** Path of the built-in authorization server on the API's origin ({auth_url} = PUBLIC_BASE_URL + this). */
export const OAUTH_MOUNT = '/oauth';
/** Our sign-in and consent page; served by the API, not by the provider. */
export const interactionPath = (uid: string) => `${OAUTH_MOUNT}/interaction/${uid}`;

/** The standard OpenID scopes a client may request; effective scopes come from the connected app. */
export const OPENID_SCOPES = ['openid', 'offline_access', 'profile', 'email'];
/**
 * Every scope the server knows: the OpenID ones and the MCP endpoint's (memory.read, memory.write,
 * its resource scopes, which a client may name to pre-select them at consent).
 */
export const SCOPES_SUPPORTED = [...OPENID_SCOPES, ...CONNECTED_APP_SCOPES];

/** Public clients (PKCE, the usual MCP client) and clients with a registered secret. */
export const CLIENT_AUTH_METHODS = ['none', 'client_secret_basic', 'client_secret_post'];
export const GRANT_TYPES = ['authorization_code', 'refresh_token'];
/** The authorization code flow only: no implicit or hybrid response types (and so no implicit grant). */
export const RESPONSE_TYPES = ['code'] as const;

/** Both addresses of the MCP endpoint are one protected resource; tokens name one of them. */
export const mcpResources = (config: Pick<Config, 'mcp'>) => [config.mcp.publicUrl, config.mcp.apiMountUrl];

/**
 * Every URL the authorization server fetches (a registering client's sector_identifier_uri, a client's
 * jwks_uri or metadata document) goes through the ingest's SSRF-safe fetch: the host is resolved once,
 * every address is checked before any connection (public addresses only: never loopback, private or
 * link-local, whatever a name resolves to), redirects are checked hop by hop, and size and time are
 * bounded. oidc-provider's own guard only drops a special-use address after connecting, which let
 * registration probe internal hosts and ports.
 */
export async function providerFetch(input: string | URL | Request, init?: RequestInit): Promise<Response> {
  if (input instanceof Request || (init?.method ?? 'GET') !== 'GET') throw new Error('the authorization server fetches only with GET');
  const res = await safeFetch(input, { policy: { allowlist: [] }, maxBytes: 256 * 1024, timeoutMs: 2500, userAgent: 'CairnOAuth/1.0' });
  return new Response(new Uint8Array(res.bytes), { status: res.status, headers: res.contentType ? { 'content-type': res.contentType } : {} });
}

/**
 * The built-in authorization server for MCP clients (spec 5, MCP OAuth), built on oidc-provider:
 * metadata, dynamic client registration, authorization code with PKCE S256 (required of every
 * client), resource indicators bound to the MCP endpoint, rotating refresh tokens and revocation.
 * The effective scopes (memory.read, memory.write) are the MCP resource's scopes: chosen at consent,
 * named in the token response, and kept in the connected-application state
 * (core/oauth/connected-apps.ts), which is read on every MCP request.
 */
export async function createOauthProvider(deps: { config: Config; orm: Orm }): Promise<Provider> {
  const { config, orm } = deps;
  const secrets = await loadOauthSecrets(orm.em.fork() as EntityManager);
  const secure = config.publicBaseUrl.startsWith('https:');
  const provider = new Provider(config.oauth.issuer, providerConfiguration(config, orm, secrets, secure));
  provider.use(connectOnCodeExchange(orm));
  // Behind a TLS-terminating proxy PUBLIC_BASE_URL is https while the socket is http: trust the proxy's
  // X-Forwarded-Proto only in that deployment shape.
  provider.proxy = secure;
  return provider;
}

function providerConfiguration(config: Config, orm: Orm, secrets: OauthSecrets, secure: boolean): Configuration {
  return {
    adapter: (name: string) => new PostgresOauthAdapter(orm, name, { unusedClientTtlSeconds: config.oauth.unusedClientTtlSeconds }),
    jwks: secrets.jwks as Configuration['jwks'],
    cookies: {
      keys: secrets.cookieKeys,
      names: { session: 'service_oauth_session', interaction: 'service_oauth_interaction', resume: 'service_oauth_resume' },
      long: { httpOnly: true, sameSite: 'lax', secure },
      short: { httpOnly: true, sameSite: 'lax', secure },
    },
    findAccount: (_ctx, id) => findAccount(orm, id),
    claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
    scopes: SCOPES_SUPPORTED,
    responseTypes: [...RESPONSE_TYPES],
    clientAuthMethods: CLIENT_AUTH_METHODS as Configuration['clientAuthMethods'],
    clientDefaults: {
      grant_types: GRANT_TYPES,
      response_types: [...RESPONSE_TYPES],
      token_endpoint_auth_method: 'none',
    },
    extraClientMetadata: { properties: ['scope'], validator: allowConnectedAppScopes },
    features: providerFeatures(config),
    fetch: providerFetch,
    pkce: { required: () => true },
    interactions: { url: async (_ctx, interaction) => interactionPath(interaction.uid), policy: interactionPolicyWithConsent() },
    // Refresh tokens for every client that registered the refresh_token grant, without requiring the
    // OpenID `offline_access` dance (MCP clients keep a connection, not a browser session).
    issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
    rotateRefreshToken: true,
    // Tokens live their own lifetime; the provider's short cookie session is only for the redirect dance.
    expiresWithSession: async () => false,
    ttl: {
      AccessToken: config.oauth.accessTokenTtlSeconds,
      AuthorizationCode: 60,
      IdToken: 3600,
      Interaction: 600,
      Session: 600,
      Grant: config.oauth.refreshTokenTtlSeconds,
      RefreshToken: config.oauth.refreshTokenTtlSeconds,
    },
    renderError,
  };
}

/** The account a grant names, while it is active and enabled: its id, email and name are the claims. */
async function findAccount(orm: Orm, id: string) {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return undefined;
  const account = await activeAccount(orm.em.fork() as EntityManager, id);
  if (!account) return undefined;
  return {
    accountId: account.id,
    claims: async () => ({ sub: account.id, email: account.email, email_verified: true, name: account.display_name ?? undefined }),
  };
}

/**
 * A registered `scope` is an allow-list for the scopes the client may request. The MCP scopes are
 * always allowed: consent decides them, and a client that registered `openid` alone must still be
 * able to receive them (interaction.ts names the granted ones in the resumed request).
 */
const allowConnectedAppScopes: NonNullable<Configuration['extraClientMetadata']>['validator'] = (_ctx, key, value, metadata) => {
  if (key === 'scope' && typeof value === 'string') {
    metadata.scope = [...new Set([...value.split(' ').filter(Boolean), ...CONNECTED_APP_SCOPES])].join(' ');
  }
};

function providerFeatures(config: Config): Configuration['features'] {
  const resources = mcpResources(config);
  return {
    devInteractions: { enabled: false },
    // Open registration (RFC 7591), limited per client address (api/oauth/provider-routes.ts); unused
    // registrations expire (adapter.ts). No registration access token: without registration management
    // it could only read the registration back, and it would outlive it.
    registration: { enabled: true, issueRegistrationAccessToken: false },
    // RFC 7009: a client may revoke only tokens issued to itself.
    revocation: { enabled: true, allowedPolicy: async (_ctx, client, token) => token.clientId === client.clientId },
    userinfo: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A client that names no resource gets a token for the MCP endpoint (the only resource).
      defaultResource: async () => config.mcp.publicUrl,
      useGrantedResource: async () => true,
      async getResourceServerInfo(_ctx, resource) {
        if (!resources.includes(resource)) throw new errors.InvalidTarget('resource must be the MCP endpoint');
        return {
          scope: CONNECTED_APP_SCOPES.join(' '),
          audience: resource,
          accessTokenFormat: 'opaque',
          accessTokenTTL: config.oauth.accessTokenTtlSeconds,
        };
      },
    },
  };
}

/** Errors at the authorization endpoint show a plain page (no provider internals). */
const renderError: Configuration['renderError'] = async (ctx, out) => {
  ctx.type = 'html';
  ctx.body = `<!doctype html><meta charset="utf-8"><title>Authorization error</title><h1>Authorization error</h1><p>${escapeHtml(String(out.error_description ?? out.error))}</p>`;
};

/**
 * oidc-provider's policy plus one check: every authorization shows the consent page, also when the
 * provider's short session already holds a grant for the client. The user confirms each connection,
 * and a request naming no scope learns the granted ones there (api/oauth/interaction.ts).
 */
function interactionPolicyWithConsent() {
  const policy = interactionPolicy.base();
  policy.get('consent')!.checks.add(
    new interactionPolicy.Check(
      'consent_every_authorization',
      'every authorization is confirmed by the user',
      'consent_required',
      (ctx) => !ctx.oidc.result?.consent,
    ),
  );
  return policy;
}

/**
 * After a successful authorization-code exchange at the token endpoint, before the response leaves:
 * the client registration becomes a connected application with the scopes of the access token (the
 * ones the user granted). Nothing is connected by a refused, failed or abandoned authorization.
 */
function connectOnCodeExchange(orm: Orm) {
  return async (ctx: KoaContextWithOIDC, next: () => Promise<unknown>) => {
    await next();
    if (ctx.oidc?.route !== 'token' || ctx.status !== 200 || ctx.oidc.params?.grant_type !== 'authorization_code') return;
    const { AccessToken: token, Client: client } = ctx.oidc.entities;
    await connectApplication(orm.em.fork() as EntityManager, {
      accountId: token!.accountId,
      clientId: client!.clientId,
      clientName: client!.clientName ?? null,
      redirectUris: client!.redirectUris ?? [],
      scopes: connectedAppScopes(token!.scope),
    });
  };
}

export function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c]!);
}
