import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type Provider from 'oidc-provider';
import { resolveBrowserSession } from '../../core/auth/resolve.ts';
import { login } from '../../core/auth/sessions.ts';
import type { Config } from '../../platform/config.ts';
import { AppError, forbidden } from '../../platform/errors.ts';
import { CONNECTED_APP_SCOPES, type ConnectedAppScope } from '../../core/contracts/oauth.ts';
import { connectedAppScopes, DEFAULT_CONNECTED_APP_SCOPES } from '../../core/oauth/connected-apps.ts';
import { interactionPath, mcpResources, OPENID_SCOPES } from '../../core/oauth/provider.ts';
import { SESSION_COOKIE, setSessionCookie } from '../plugins/auth.ts';
import { OAUTH_PAGE_CSP } from '../console/csp.ts';
import { consentPage, messagePage, signInPage } from './pages.ts';

type Form = Record<string, string | string[]>;

function parseForm(body: string): Form {
  const out: Form = {};
  for (const [k, v] of new URLSearchParams(body)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}
const one = (v: string | string[] | undefined) => (Array.isArray(v) ? v[0] : v) ?? '';
const many = (v: string | string[] | undefined) => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

/**
 * The built-in authorization server's sign-in and consent step (spec 5, MCP OAuth). Sign-in is the
 * service's own browser session (cookie service_session): a signed-in user goes straight to consent,
 * others sign in here first with the same email/password sign-in as POST /v1/auth/login. At consent
 * the user picks the connected application's effective scopes. Form posts are protected by the
 * provider's interaction cookie (bound to the interaction id) and an Origin check.
 */
export async function interactionRoutes(app: FastifyInstance, opts: { config: Config; provider: Provider }) {
  const { config, provider } = opts;
  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: 16_384 }, (_req, body, done) =>
    done(null, parseForm(body as string)),
  );

  const hide = { schema: { hide: true } };

  app.get('/oauth/interaction/:uid', hide, async (request, reply) => {
    const found = await interaction(provider, request, reply);
    if (!found) return expired(reply);
    const principal = await signedIn(config, request);
    if (!principal) return html(reply, 200, signInPage({ action: `${interactionPath(found.details.uid)}/login`, clientName: found.clientName }));
    return showConsent(reply, found, principal);
  });

  app.post('/oauth/interaction/:uid/login', hide, async (request, reply) => {
    checkOrigin(config, request);
    const found = await interaction(provider, request, reply);
    if (!found) return expired(reply);
    return signIn(config, request, reply, found);
  });

  app.post('/oauth/interaction/:uid/confirm', hide, async (request, reply) => {
    checkOrigin(config, request);
    const found = await interaction(provider, request, reply);
    if (!found) return expired(reply);
    const principal = await signedIn(config, request);
    if (!principal) return reply.code(303).header('location', interactionPath(found.details.uid)).send();
    const chosen = many(((request.body ?? {}) as Form).scope);
    const scopes = CONNECTED_APP_SCOPES.filter((s) => chosen.includes(s)) as ConnectedAppScope[];
    if (scopes.length === 0) return showConsent(reply, found, principal, 'Choose at least one kind of access, or deny.');
    await grantConsent({ config, provider }, request, reply, { found, accountId: principal.accountId, scopes });
  });

  app.post('/oauth/interaction/:uid/abort', hide, async (request, reply) => {
    checkOrigin(config, request);
    const found = await interaction(provider, request, reply);
    if (!found) return expired(reply);
    await finish(provider, request, reply, { error: 'access_denied', error_description: 'The user denied access.' });
  });
}

const html = (reply: FastifyReply, status: number, body: string) =>
  reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('x-frame-options', 'DENY')
    .header('content-security-policy', OAUTH_PAGE_CSP)
    .type('text/html; charset=utf-8').send(body);

const expired = (reply: FastifyReply) =>
  html(reply, 400, messagePage('This sign-in link has expired', 'Go back to your application and connect it again.'));

function checkOrigin(config: Config, request: FastifyRequest) {
  const origin = request.headers.origin;
  if (typeof origin !== 'string' || !config.allowedOrigins.includes(origin)) throw forbidden('Forms must be sent from this site.');
}

/** The browser session's principal, when its account is active. */
async function signedIn(config: Config, request: FastifyRequest) {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return null;
  const principal = await resolveBrowserSession(request.em, config.auth, token, (err) => request.log.warn({ err }, 'session touch failed'));
  return principal?.accountState === 'active' ? principal : null;
}

/** The pending interaction (validated against its cookie by the provider) and its client. */
async function interaction(provider: Provider, request: FastifyRequest, reply: FastifyReply) {
  const details = await provider.interactionDetails(request.raw, reply.raw).catch(() => null);
  const uid = (request.params as { uid: string }).uid;
  if (!details || details.uid !== uid) return null;
  const clientId = String(details.params.client_id);
  const client = await provider.Client.find(clientId);
  if (!client) return null;
  const redirect = String(details.params.redirect_uri ?? client.redirectUris?.[0] ?? '');
  return {
    details,
    clientId,
    clientName: client.clientName ?? clientId,
    redirectHost: URL.canParse(redirect) ? new URL(redirect).host : redirect,
  };
}
type Interaction = NonNullable<Awaited<ReturnType<typeof interaction>>>;

/** Consent pre-selects the MCP scopes the request named, or the defaults when it named none. */
function showConsent(reply: FastifyReply, found: Interaction, principal: { email: string }, error?: string) {
  const uid = found.details.uid;
  const requested = connectedAppScopes(String(found.details.params.scope ?? ''));
  return html(
    reply,
    error ? 400 : 200,
    consentPage({
      action: `${interactionPath(uid)}/confirm`,
      abortAction: `${interactionPath(uid)}/abort`,
      clientName: found.clientName,
      clientId: found.clientId,
      redirectHost: found.redirectHost,
      email: principal.email,
      current: requested.length ? requested : DEFAULT_CONNECTED_APP_SCOPES,
      error,
    }),
  );
}

/** The sign-in form's post: signed in, back to the interaction; refused, the form again with the reason. */
async function signIn(config: Config, request: FastifyRequest, reply: FastifyReply, found: Interaction) {
  const form = (request.body ?? {}) as Form;
  const email = one(form.email);
  try {
    const result = await login(request.em, config.auth, { email, password: one(form.password), clientAddress: request.ip });
    setSessionCookie(reply, result.token, result.session.expiresAt, config.publicBaseUrl);
  } catch (err) {
    if (!(err instanceof AppError) || err.status >= 500) throw err;
    if (err.headers['retry-after']) reply.header('retry-after', err.headers['retry-after']);
    const action = `${interactionPath(found.details.uid)}/login`;
    return html(reply, err.status, signInPage({ action, clientName: found.clientName, error: err.message, email }));
  }
  return reply.code(303).header('location', interactionPath(found.details.uid)).send();
}

/** Saves the grant of the chosen scopes and resumes the authorization request with it. */
async function grantConsent(
  { config, provider }: { config: Config; provider: Provider },
  request: FastifyRequest,
  reply: FastifyReply,
  consent: { found: Interaction; accountId: string; scopes: ConnectedAppScope[] },
) {
  const { found: { details, clientId }, accountId, scopes } = consent;
  const grant = new provider.Grant({ accountId, clientId });
  const openid = String(details.params.scope ?? '').split(' ').filter((s) => OPENID_SCOPES.includes(s));
  // The MCP scopes are registered scopes of the server (so clients may register and request them),
  // which oidc-provider checks as granted at the server level too, besides the resource's own.
  grant.addOIDCScope([...openid, ...scopes].join(' '));
  const resources = many(details.params.resource as string | string[] | undefined);
  for (const resource of resources.length ? resources : [config.mcp.publicUrl]) {
    if (mcpResources(config).includes(resource)) grant.addResourceScope(resource, scopes.join(' '));
  }
  const grantId = await grant.save();
  // The resumed authorization request asks for exactly what was granted: a request that named no
  // scope (or only OpenID ones) would otherwise be refused as granting nothing, and one that named
  // other MCP scopes than the user chose gets the chosen ones in its code and tokens. The
  // connected application itself is created when the code is exchanged (core/oauth/provider.ts).
  details.params.scope = [...openid, ...scopes].join(' ');
  await details.save(Math.max(1, details.exp - Math.floor(Date.now() / 1000)));
  await finish(provider, request, reply, { login: { accountId }, consent: { grantId } });
}

/** Hands the response to the provider, which redirects back into the authorization request with `result`. */
async function finish(provider: Provider, request: FastifyRequest, reply: FastifyReply, result: Parameters<Provider['interactionFinished']>[2]) {
  reply.hijack();
  await provider.interactionFinished(request.raw, reply.raw, result, { mergeWithLastSubmission: false });
}
