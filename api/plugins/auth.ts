import cookie from '@fastify/cookie';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Principal, CredentialKind } from '../../core/auth/principal.ts';
import { resolveApiKey, resolveBrowserSession, resolveCliToken } from '../../core/auth/resolve.ts';
import type { Config } from '../../platform/config.ts';
import type { Scope } from '../../core/contracts/account.ts';
import type { Orm } from '../../platform/db/orm.ts';
import { AppError, forbidden, unauthorized } from '../../platform/errors.ts';
import { accountHome, HOME_HEADER } from '../../platform/net/affinity.ts';
import type { RateLimiter } from '../../core/metering/rate-limit.ts';

export const SESSION_COOKIE = 'service_session';

/**
 * What a route accepts, declared next to the route (`config: { auth: {...} }`). Routes without a rule
 * are public. The plugin implements the credential matrix of spec section 5 in one place.
 */
export type AuthRule = {
  accept: CredentialKind[];
  /** API-key scopes required (account credentials carry the account's authority). */
  scopes?: Scope[];
  /** Missing credentials are allowed (the handler reads `request.principal`, possibly null). */
  optional?: boolean;
  /** `always`: CSRF checked even with no session (login, sign-out). Default: for browser-session writes. */
  csrf?: 'always';
  /** A deletion_pending account may call this route (retry deletion, sign out, read session status). */
  allowPending?: boolean;
};

declare module 'fastify' {
  interface FastifyContextConfig {
    auth?: AuthRule;
  }
  interface FastifyRequest {
    principal: Principal | null;
    /** This request's own EntityManager fork. */
    em: EntityManager;
  }
}

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function checkCsrf(request: FastifyRequest, allowedOrigins: string[]): void {
  if (request.headers['x-service-csrf'] !== '1') {
    throw forbidden('Browser-session writes need the header x-service-csrf: 1.');
  }
  const origin = request.headers.origin;
  if (typeof origin !== 'string' || !allowedOrigins.includes(origin)) {
    throw forbidden('Browser-session writes must come from an allowed origin.');
  }
}

const kindLabel: Record<CredentialKind, string> = {
  apiKey: 'API keys',
  cli: 'CLI session tokens',
  browser: 'browser sessions',
  oauth: 'MCP OAuth tokens',
};

export const authPlugin = fp(
  async (
    app: FastifyInstance,
    opts: { orm: Orm; config: Pick<Config, 'auth' | 'allowedOrigins' | 'publicBaseUrl'>; rateLimiter?: RateLimiter },
  ) => {
    await app.register(cookie);
    app.decorateRequest('principal', null);
    app.decorateRequest('em', null as unknown as EntityManager);

    app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
      request.em = opts.orm.em.fork();
      const rule = request.routeOptions.config?.auth;
      if (!rule) return;
      if (rule.csrf === 'always') checkCsrf(request, opts.config.allowedOrigins);
      if (rule.accept.length === 0) return; // takes no credential (sign-in): whatever is sent is ignored

      const onError = (err: unknown) => request.log.warn({ err }, 'credential last-used update failed');
      let principal: Principal | null = null;
      const header = request.headers.authorization;
      if (header !== undefined) {
        // An Authorization header is the credential; a cookie sent alongside it is ignored.
        // The scheme name is case-insensitive (RFC 9110).
        const match = /^Bearer ([A-Za-z0-9._~+/=-]{1,512})$/i.exec(header);
        if (!match) throw unauthorized('Malformed Authorization header; use "Bearer <credential>".');
        principal =
          (await resolveApiKey(request.em, match[1]!, onError)) ??
          (await resolveCliToken(request.em, match[1]!, onError));
        if (!principal) throw unauthorized('The credential is missing, malformed, expired or revoked.');
      } else {
        const token = request.cookies[SESSION_COOKIE];
        if (token) principal = await resolveBrowserSession(request.em, opts.config.auth, token, onError);
      }

      if (!principal) {
        if (rule.optional) return;
        throw unauthorized();
      }
      if (!rule.accept.includes(principal.kind)) {
        throw unauthorized(`This route does not accept ${kindLabel[principal.kind]}.`);
      }
      if (principal.kind === 'browser' && !SAFE_METHODS.has(request.method) && rule.csrf !== 'always') {
        checkCsrf(request, opts.config.allowedOrigins);
      }
      if (principal.accountState === 'deletion_pending' && !rule.allowPending) {
        if (principal.kind !== 'browser') throw unauthorized('This account is being deleted.');
        throw new AppError(
          403,
          'account_deletion_pending',
          'Account deletion is pending: you can only retry the deletion or sign out.',
        );
      }
      if (principal.kind === 'apiKey' && rule.scopes?.some((s) => !principal.scopes.includes(s))) {
        throw forbidden(`This API key lacks the scope ${rule.scopes.filter((s) => !principal.scopes.includes(s)).join(', ')}.`);
      }
      // Every credential of an account (API keys, CLI and browser sessions; MCP OAuth tokens on the MCP
      // endpoint) draws from one account-wide window, checked after authorization so a refused request
      // does not use up the window. An account being deleted only retries the deletion or signs out:
      // counting those would bring back the window row its purge removed.
      if (opts.rateLimiter && principal.accountState === 'active') await opts.rateLimiter.consume(principal.accountId);
      request.principal = principal;
      reply.header(HOME_HEADER, accountHome(principal.accountId));
    });
  },
);

/** The principal of a route whose rule is not optional (the plugin guarantees it). */
export function principalOf(request: FastifyRequest): Principal {
  if (!request.principal) throw unauthorized();
  return request.principal;
}

export function setSessionCookie(reply: FastifyReply, token: string, expiresAt: Date, publicBaseUrl: string) {
  reply.setCookie(SESSION_COOKIE, token, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: publicBaseUrl.startsWith('https:'),
    expires: expiresAt,
  });
}

export function clearSessionCookie(reply: FastifyReply, publicBaseUrl: string) {
  reply.clearCookie(SESSION_COOKIE, {
    httpOnly: true,
    sameSite: 'lax',
    path: '/',
    secure: publicBaseUrl.startsWith('https:'),
  });
}
