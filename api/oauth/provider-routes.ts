import type { IncomingMessage } from 'node:http';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import type { RateLimiter } from '../../core/metering/rate-limit.ts';
import { OAUTH_MOUNT } from '../../core/oauth/provider.ts';

/**
 * Mounts the built-in authorization server (oidc-provider, a Koa application) at /oauth on the API:
 * requests are handed over untouched (Fastify neither parses nor answers them), with the mount path
 * stripped the way the provider expects (`originalUrl` keeps the full path for the URLs it builds).
 * The RFC 8414 path-inserted metadata address, which MCP clients try first, serves the discovery document.
 * Dynamic client registrations are limited per client address (TRUST_PROXY decides what that is).
 */
export async function oauthProviderRoutes(app: FastifyInstance, opts: { provider: Provider; rateLimiter?: RateLimiter }) {
  const callback = opts.provider.callback();
  const { rateLimiter } = opts;
  if (rateLimiter) {
    app.addHook('onRequest', async (request) => {
      if (request.method === 'POST' && isRegistration(request.url)) await rateLimiter.consumeRegistration(request.ip);
    });
  }
  app.removeAllContentTypeParsers();
  // Leave the body stream to the provider, which reads and limits it itself.
  app.addContentTypeParser('*', (_request, _payload, done) => done(null));

  const hide = { schema: { hide: true } };
  // The provider builds its endpoints' URLs (discovery, redirects) from the request's host: a client
  // could name any host. They are the configured public address's, whatever the request says.
  const issuer = new URL(opts.provider.issuer);
  const handOver = (path: (url: string) => string) => async (request: FastifyRequest, reply: FastifyReply) => {
    reply.hijack();
    const raw = request.raw as IncomingMessage & { originalUrl?: string };
    raw.headers.host = issuer.host;
    delete raw.headers['x-forwarded-host'];
    if (opts.provider.proxy) raw.headers['x-forwarded-proto'] = issuer.protocol.slice(0, -1);
    const url = raw.url ?? '/';
    raw.originalUrl = `${OAUTH_MOUNT}${path(url)}`;
    raw.url = path(url);
    await callback(raw, reply.raw);
  };

  app.all(`${OAUTH_MOUNT}/*`, hide, handOver((url) => url.slice(OAUTH_MOUNT.length) || '/'));
  const discovery = handOver(() => '/.well-known/openid-configuration');
  app.get(`/.well-known/oauth-authorization-server${OAUTH_MOUNT}`, hide, discovery);
  app.get(`/.well-known/openid-configuration${OAUTH_MOUNT}`, hide, discovery);
}

/**
 * Whether a request goes to the registration endpoint however it is spelled: the provider's router
 * matches paths without regard to case, a trailing slash or percent-encoded letters, so the limit
 * compares them the same way (and doubled slashes too).
 */
export function isRegistration(url: string): boolean {
  let path = url.split('?')[0]!;
  try {
    path = decodeURIComponent(path);
  } catch {
    // Not decodable: the provider cannot route it either.
  }
  return path.toLowerCase().replace(/\/{2,}/g, '/').replace(/\/$/, '') === `${OAUTH_MOUNT}/reg`;
}
