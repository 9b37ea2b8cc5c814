import { auth, discoverOAuthServerInfo, exchangeAuthorization, registerClient, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type McpTool } from '../../../api/mcp/tools/registry.ts';
import {
  ApiClient,
  createKey,
  createTestAccount,
  expectError,
  signIn,
  sqlClient,
  type CreatedKey,
  type Json,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { Browser, connectWithOauth, consent, MemoryOAuthClient } from '../../helpers/oauth-client.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// MCP OAuth (spec 5): the MCP SDK client's own OAuth flow against the built-in authorization server,
// with the "browser" step (sign-in, consent) driven over HTTP: discovery, dynamic registration,
// authorization with the signed-in session, PKCE S256, token, refresh, revocation on the next request,
// effective scopes from the connected application.

const tool = (name: string, scope: 'memory.read' | 'memory.write' | 'query') =>
  defineTool({
    name,
    title: name,
    description: `Test tool needing ${scope}.`,
    input: z.strictObject({}),
    output: z.object({ account: z.string(), kind: z.string(), scopes: z.array(z.string()) }),
    scopes: [scope],
    annotations: { readOnlyHint: scope === 'memory.read' },
    run: async (ctx) => ({ data: { account: ctx.principal.email, kind: ctx.principal.kind, scopes: [...ctx.principal.scopes] } }),
  });
const TOOLS = [tool('read_probe', 'memory.read'), tool('write_probe', 'memory.write'), tool('query_probe', 'query')] as unknown as McpTool[];

let db: TestDatabase;
let sql: Sql;
let stack: McpStack;
let api: ApiClient;
let alice: TestAccount;
let aliceCookie: string;
let aliceKey: CreatedKey;
const temporal = testTemporalClient();
/** Bodies and headers of every MCP response, to prove none carries a credential. */
const transcript: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  stack = await startMcpStack({ orm: db.orm, temporal, tools: TOOLS });
  api = new ApiClient(stack.baseUrl);
  alice = await createTestAccount(db.orm);
  aliceCookie = await signIn(api, alice);
  aliceKey = await createKey(api, { cookie: aliceCookie }, { scopes: ['memory.read'] });
});
afterAll(async () => {
  await stack?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const recordingFetch: typeof fetch = async (input, init) => {
  const res = await fetch(input, init);
  if (String(input instanceof Request ? input.url : input).startsWith(stack.mcpUrl)) {
    const copy = res.clone();
    transcript.push((await copy.text()) + JSON.stringify([...res.headers]));
  }
  return res;
};

const transportFor = (oauth: MemoryOAuthClient) =>
  new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: oauth, fetch: recordingFetch });

/** The whole first connection, as alice unless another session is given, with every MCP response recorded. */
const connect = (scopes: string[], oauth = new MemoryOAuthClient(), cookie = aliceCookie) =>
  connectWithOauth({ mcpUrl: stack.mcpUrl, baseUrl: stack.baseUrl, cookie, scopes, oauth, fetch: recordingFetch });

const mcpWithToken = async (token: string) => {
  const res = await fetch(stack.mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_probe', arguments: {} } }),
  });
  const text = await res.text();
  transcript.push(text + JSON.stringify([...res.headers]));
  return { status: res.status, body: text ? JSON.parse(text) : undefined, headers: res.headers };
};

const connectedApps = async (cookie = aliceCookie) => {
  const res = await api.get('/v1/account/connected-apps', { as: { cookie } });
  expect(res.status).toBe(200);
  expect(res.body.schemaVersion).toBe('service-connected-app-list-v2');
  return res.body.connectedApps as Json[];
};
/** The connected application one of whose registrations is this client. */
const appOf = async (clientId: string, cookie = aliceCookie) =>
  (await connectedApps(cookie)).find((a) => a.registrations.some((r: Json) => r.clientId === clientId));

describe('the full flow with the MCP SDK client', () => {
  it('registers, authorizes with the signed-in session, exchanges the code (PKCE S256) and calls tools with the chosen scopes', async () => {
    const { oauth, client } = await connect(['memory.read']);
    const authUrl = oauth.authorizationUrl!;
    expect(authUrl.searchParams.get('code_challenge_method')).toBe('S256');
    expect(authUrl.searchParams.get('resource')).toBe(stack.mcpUrl);
    // The client configured no scope: the SDK asks for what the protected-resource metadata lists.
    expect(authUrl.searchParams.get('scope')).toBe('memory.read memory.write');
    expect(oauth.info).toMatchObject({ token_endpoint_auth_method: 'none' });
    // The token response names what the user granted (read only), not what was asked.
    expect(oauth.saved).toMatchObject({ token_type: expect.stringMatching(/^bearer$/i), refresh_token: expect.any(String), scope: 'memory.read' });

    const read = await client.callTool({ name: 'read_probe', arguments: {} });
    expect(read.isError).toBeFalsy();
    // Exactly the granted scope (spec 4.6, 5): memory.read carries no `query`.
    expect(read.structuredContent).toEqual({ account: alice.email, kind: 'oauth', scopes: ['memory.read'] });
    const write = await client.callTool({ name: 'write_probe', arguments: {} });
    expect(write.isError).toBe(true);
    expect(write.structuredContent).toEqual({ error: { code: 'forbidden', message: expect.stringContaining('memory.write') } });
    const query = await client.callTool({ name: 'query_probe', arguments: {} });
    expect(query.isError).toBe(true);
    expect(query.structuredContent).toEqual({ error: { code: 'forbidden', message: expect.stringContaining('query') } });

    const app = await appOf(oauth.info!.client_id);
    expect(app).toEqual({
      id: expect.any(String),
      clientName: oauth.clientMetadata.client_name,
      redirectUris: [oauth.redirectUrl],
      scopes: ['memory.read'],
      status: 'active',
      firstConnectedAt: expect.any(String),
      authorizedAt: expect.any(String),
      lastUsedAt: expect.any(String),
      registrations: [
        {
          clientId: oauth.info!.client_id,
          scopes: ['memory.read'],
          connectedAt: app!.firstConnectedAt,
          authorizedAt: expect.any(String),
          lastUsedAt: expect.any(String),
        },
      ],
    });
    await client.close();
  });

  it('stores tokens and codes only as digests', async () => {
    const { oauth, client } = await connect(['memory.read']);
    const dump = JSON.stringify(await sql.query('select * from oauth_payload'));
    expect(dump).not.toContain(oauth.saved!.access_token);
    expect(dump).not.toContain(oauth.saved!.refresh_token!);
    await client.close();
  });

  it('refreshes: the SDK exchanges the refresh token (rotated) for a new access token that works', async () => {
    const { oauth, client } = await connect(['memory.read', 'memory.write']);
    await client.close();
    const before = oauth.saved!;
    expect(await auth(oauth, { serverUrl: stack.mcpUrl })).toBe('AUTHORIZED');
    expect(oauth.saved!.access_token).not.toBe(before.access_token);
    expect(oauth.saved!.refresh_token).not.toBe(before.refresh_token);
    const res = await mcpWithToken(oauth.saved!.access_token);
    expect(res.status).toBe(200);
    expect(res.body.result.structuredContent.scopes).toEqual(['memory.read', 'memory.write']);
    expect(oauth.saved!.scope).toBe('memory.read memory.write');
  });

  it('effective scopes are read on every request: consenting again with other scopes changes the same token', async () => {
    const oauth = new MemoryOAuthClient();
    const { client } = await connect(['memory.read', 'memory.write'], oauth);
    const token = oauth.saved!.access_token;
    expect((await mcpWithToken(token)).body.result.structuredContent.scopes).toContain('memory.write');
    // The user authorizes the same client again with read-only access: once that code is exchanged,
    // the old token is read-only too (an authorization that is not completed changes nothing).
    oauth.saved = undefined;
    const second = new Client({ name: 'again', version: '1' });
    await expect(second.connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    const callback = await consent(new Browser(stack.baseUrl, aliceCookie), oauth.authorizationUrl!, ['memory.read']);
    expect((await mcpWithToken(token)).body.result.structuredContent.scopes).toContain('memory.write');
    await transportFor(oauth).finishAuth(callback.searchParams.get('code')!);
    expect((await mcpWithToken(token)).body.result.structuredContent.scopes).toEqual(['memory.read']);
    await client.close();
  });
});

/**
 * An authorization request as a client that names no scope (or only OpenID scopes) sends it, with the
 * MCP SDK's own discovery, registration, authorization-URL and code-exchange functions.
 */
async function authorizeNaming(
  scope: string | undefined,
  chosen: string[],
  { register = scope, name = `Scope-less client ${Math.random().toString(36).slice(2, 8)}` }: { register?: string | null; name?: string } = {},
) {
  const { authorizationServerUrl, authorizationServerMetadata: metadata } = await discoverOAuthServerInfo(stack.mcpUrl);
  const redirectUrl = 'http://127.0.0.1:9/oauth/callback';
  const clientInformation = await registerClient(authorizationServerUrl, {
    metadata,
    clientMetadata: { client_name: name, redirect_uris: [redirectUrl], token_endpoint_auth_method: 'none', ...(register ? { scope: register } : {}) },
  });
  const { authorizationUrl, codeVerifier } = await startAuthorization(authorizationServerUrl, {
    metadata, clientInformation, redirectUrl, scope, resource: new URL(stack.mcpUrl),
  });
  expect(authorizationUrl.searchParams.get('scope')).toBe(scope ?? null);
  const browser = new Browser(stack.baseUrl, aliceCookie);
  const page = await browser.follow(authorizationUrl.href);
  const checked = [...page.text.matchAll(/name="scope" value="([^"]+)" checked/g)].map((m) => m[1]);
  const callback = await consent(browser, authorizationUrl, chosen);
  const code = callback.searchParams.get('code')!;
  const beforeExchange = await appOf(clientInformation.client_id);
  const tokens = await exchangeAuthorization(authorizationServerUrl, {
    metadata, clientInformation, authorizationCode: code, codeVerifier, redirectUri: redirectUrl, resource: new URL(stack.mcpUrl),
  });
  return { clientInformation, checked, beforeExchange, tokens };
}

describe('scopes (a request naming none gets the documented defaults; the token response names the granted ones)', () => {
  it('without scope: consent offers the defaults (memory.read, memory.write), the code is issued and its token works', async () => {
    const { checked, tokens } = await authorizeNaming(undefined, ['memory.read', 'memory.write']);
    expect(checked).toEqual(['memory.read', 'memory.write']);
    expect(tokens.scope).toBe('memory.read memory.write');
    const res = await mcpWithToken(tokens.access_token);
    expect(res.status).toBe(200);
    expect(res.body.result.structuredContent.scopes).toEqual(['memory.read', 'memory.write']);
  });

  it('without scope, granting read only: the token response says memory.read and write tools are refused', async () => {
    const { tokens } = await authorizeNaming(undefined, ['memory.read']);
    expect(tokens.scope).toBe('memory.read');
    expect((await mcpWithToken(tokens.access_token)).body.result.structuredContent.scopes).toEqual(['memory.read']);
  });

  it('with only OpenID scopes (a client registered with scope "openid"): the defaults too, and an ID token', async () => {
    const { checked, tokens } = await authorizeNaming('openid', ['memory.write']);
    expect(checked).toEqual(['memory.read', 'memory.write']);
    expect(tokens.scope).toBe('memory.write');
    expect(tokens.id_token).toEqual(expect.any(String));
    expect((await mcpWithToken(tokens.access_token)).body.result).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden' } } });
  });

  it('every authorization shows consent: right after one, in the same browser, prompt=none is refused', async () => {
    const oauth = new MemoryOAuthClient();
    const browser = new Browser(stack.baseUrl, aliceCookie);
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    await consent(browser, oauth.authorizationUrl!, ['memory.read']);
    // The same browser now holds the provider's session and a grant of memory.read for this client:
    // asking for no more than that again still shows the consent page.
    const again = new URL(oauth.authorizationUrl!);
    again.searchParams.set('scope', 'memory.read');
    expect((await browser.follow(again.href)).text).toMatch(/Connect .+ to your memory\?/);
    again.searchParams.set('prompt', 'none');
    const refused = await browser.follow(again.href);
    expect(new URL(refused.location!).searchParams.get('error')).toBe('consent_required');
  });

  it('naming one MCP scope pre-selects it; the user may still grant the other', async () => {
    const { checked, tokens } = await authorizeNaming('memory.write', ['memory.read', 'memory.write']);
    expect(checked).toEqual(['memory.write']);
    expect(tokens.scope).toBe('memory.read memory.write');
  });

  it('an unknown scope is ignored like an absent one (registering with it is refused)', async () => {
    await expect(authorizeNaming('mcp:tools', ['memory.read'])).rejects.toThrow(/scope must only contain/);
    const { tokens } = await authorizeNaming('mcp:tools', ['memory.read'], { register: null });
    expect(tokens.scope).toBe('memory.read');
  });
});

describe('connected applications', () => {
  it('exist only once a code is exchanged: consent alone, or a refused or abandoned authorization, connects nothing', async () => {
    const { clientInformation, beforeExchange } = await authorizeNaming(undefined, ['memory.read']);
    expect(beforeExchange).toBeUndefined();
    expect(await appOf(clientInformation.client_id)).toMatchObject({ scopes: ['memory.read'] });
    // Abandoned after the redirect: the code is never exchanged.
    const oauth = new MemoryOAuthClient();
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    await consent(new Browser(stack.baseUrl, aliceCookie), oauth.authorizationUrl!, ['memory.read']);
    expect(await appOf(oauth.info!.client_id)).toBeUndefined();
  });

  it('re-registrations with the same name and redirect URI are one application with its registrations; disconnecting it ends them all', async () => {
    const name = `Regrouped client ${Math.random().toString(36).slice(2, 8)}`;
    const first = await connect(['memory.read'], new MemoryOAuthClient(name));
    const second = await connect(['memory.read', 'memory.write'], new MemoryOAuthClient(name));
    const other = await connect(['memory.read']); // another name: another application
    const apps = (await connectedApps()).filter((a) => a.clientName === name);
    expect(apps).toHaveLength(1);
    const [app] = apps;
    expect(app.registrations.map((r: Json) => r.clientId)).toEqual([first.oauth.info!.client_id, second.oauth.info!.client_id]);
    expect(app.registrations.map((r: Json) => r.scopes)).toEqual([['memory.read'], ['memory.read', 'memory.write']]);
    expect(app.scopes).toEqual(['memory.read', 'memory.write']);
    expect(app.firstConnectedAt).toBe(app.registrations[0].connectedAt);
    expect(app.id).toBe((await appOf(second.oauth.info!.client_id))!.id);

    const revoked = await api.delete(`/v1/account/connected-apps/${app.id}`, { as: { cookie: aliceCookie } });
    expect(revoked.status).toBe(200);
    expect(revoked.body.connectedApp.registrations).toHaveLength(2);
    expect((await mcpWithToken(first.oauth.saved!.access_token)).status).toBe(401);
    expect((await mcpWithToken(second.oauth.saved!.access_token)).status).toBe(401);
    expect((await mcpWithToken(other.oauth.saved!.access_token)).status).toBe(200);
    expect(await appOf(first.oauth.info!.client_id)).toBeUndefined();
    for (const c of [first, second, other]) await c.client.close();
  });
});

describe('revocation takes effect on the next request', () => {
  it('disconnecting the application: its access token is 401, its refresh token fails; the session and API keys stay', async () => {
    const { oauth, client } = await connect(['memory.read']);
    expect((await client.callTool({ name: 'read_probe', arguments: {} })).isError).toBeFalsy();
    const app = (await appOf(oauth.info!.client_id))!;
    const revoked = await api.delete(`/v1/account/connected-apps/${app.id}`, { as: { cookie: aliceCookie } });
    expect(revoked.status).toBe(200);
    expect(revoked.body).toEqual({
      schemaVersion: 'service-connected-app-v2',
      connectedApp: { ...app, lastUsedAt: expect.any(String), registrations: [{ ...app.registrations[0], lastUsedAt: expect.any(String) }] },
    });

    const next = await mcpWithToken(oauth.saved!.access_token);
    expect(next.status).toBe(401);
    expect(next.headers.get('www-authenticate')).toContain('error="invalid_token"');
    await expect(client.callTool({ name: 'read_probe', arguments: {} })).rejects.toThrow();
    // The refresh token is gone too.
    const refresh = await fetch(`${stack.baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: oauth.saved!.refresh_token!, client_id: oauth.info!.client_id }),
    });
    expect(refresh.status).toBe(400);
    expect(((await refresh.json()) as Json).error).toBe('invalid_grant');
    expect((await connectedApps()).map((a) => a.id)).not.toContain(app.id);
    // Neither the browser session nor the API key is affected.
    expect((await api.get('/v1/auth/session', { as: { cookie: aliceCookie } })).body.signedIn).toBe(true);
    expect((await api.get('/v1/access', { as: { bearer: aliceKey.secret } })).status).toBe(200);
  });

  it('RFC 7009 revocation of the access token at the token revocation endpoint', async () => {
    const { oauth, client } = await connect(['memory.read']);
    await client.close();
    const res = await fetch(`${stack.baseUrl}/oauth/token/revocation`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: oauth.saved!.access_token, client_id: oauth.info!.client_id }),
    });
    expect(res.status).toBe(200);
    expect((await mcpWithToken(oauth.saved!.access_token)).status).toBe(401);
  });

  it('another account cannot see or revoke the application (404)', async () => {
    const { oauth } = await connect(['memory.read']);
    const app = (await appOf(oauth.info!.client_id))!;
    const bob = await createTestAccount(db.orm);
    const bobCookie = await signIn(api, bob);
    expect(await connectedApps(bobCookie)).toEqual([]);
    expectError(await api.delete(`/v1/account/connected-apps/${app.id}`, { as: { cookie: bobCookie } }), 404, 'not_found');
    expect((await mcpWithToken(oauth.saved!.access_token)).status).toBe(200);
  });

  it('an API key cannot list or revoke connected applications; a browser revoke needs the CSRF proof', async () => {
    expectError(await api.get('/v1/account/connected-apps', { as: { bearer: aliceKey.secret } }), 401, 'unauthorized');
    const { oauth } = await connect(['memory.read']);
    const app = (await appOf(oauth.info!.client_id))!;
    const noCsrf = await api.delete(`/v1/account/connected-apps/${app.id}`, { as: { cookie: aliceCookie }, csrf: false });
    expectError(noCsrf, 403, 'forbidden');
    expect((await mcpWithToken(oauth.saved!.access_token)).status).toBe(200);
  });
});

describe('the authorization step', () => {
  it('a user who is not signed in signs in on the page first (the service session), then consents', async () => {
    const bob = await createTestAccount(db.orm);
    const oauth = new MemoryOAuthClient();
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    const browser = new Browser(stack.baseUrl);
    const page = await browser.follow(oauth.authorizationUrl!.href);
    expect(page.text).toContain(`Sign in to connect ${oauth.clientMetadata.client_name}`);
    const action = /<form method="post" action="([^"]+)"/.exec(page.text)![1]!;
    const wrong = await browser.request(action, { form: { email: bob.email, password: 'not the right password!!' } });
    expect(wrong.status).toBe(401);
    expect(wrong.text).toContain('Email or password is incorrect.');
    const ok = await browser.request(action, { form: { email: bob.email, password: bob.password } });
    expect(ok.status).toBe(303);
    expect(browser.cookies.get('service_session')).toBeTruthy();
    const callback = await consent(browser, oauth.authorizationUrl!, ['memory.read']);
    await transportFor(oauth).finishAuth(callback.searchParams.get('code')!);
    const res = await mcpWithToken(oauth.saved!.access_token);
    expect(res.body.result.structuredContent.account).toBe(bob.email);
  });

  it('denying sends the client back with access_denied and connects nothing', async () => {
    const oauth = new MemoryOAuthClient('Denied client');
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    const browser = new Browser(stack.baseUrl, aliceCookie);
    const page = await browser.follow(oauth.authorizationUrl!.href);
    const abort = /formaction="([^"]+)"/.exec(page.text)![1]!;
    const done = await browser.request(abort, { form: {} });
    const callback = await browser.follow(done.location!);
    expect(new URL(callback.location!).searchParams.get('error')).toBe('access_denied');
    expect(await appOf(oauth.info!.client_id)).toBeUndefined();
  });

  it('consent with no scope chosen is refused on the page', async () => {
    const oauth = new MemoryOAuthClient();
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    const browser = new Browser(stack.baseUrl, aliceCookie);
    const page = await browser.follow(oauth.authorizationUrl!.href);
    const action = /<form method="post" action="([^"]+)"/.exec(page.text)![1]!;
    const res = await browser.request(action, { form: {} });
    expect(res.status).toBe(400);
    expect(res.text).toContain('Choose at least one');
  });

  it('a form post from another origin is refused', async () => {
    const oauth = new MemoryOAuthClient();
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    const browser = new Browser(stack.baseUrl, aliceCookie);
    const page = await browser.follow(oauth.authorizationUrl!.href);
    const action = /<form method="post" action="([^"]+)"/.exec(page.text)![1]!;
    const res = await fetch(new URL(action, stack.baseUrl), {
      method: 'POST',
      redirect: 'manual',
      headers: {
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'https://evil.example',
        cookie: [...browser.cookies].map(([k, v]) => `${k}=${v}`).join('; '),
      },
      body: 'scope=memory.read&scope=memory.write',
    });
    expect(res.status).toBe(403);
  });

  it('the resource must be the MCP endpoint, and PKCE is required', async () => {
    const oauth = new MemoryOAuthClient();
    await expect(new Client({ name: 'x', version: '1' }).connect(transportFor(oauth))).rejects.toThrow(/Unauthorized/i);
    const browser = new Browser(stack.baseUrl, aliceCookie);
    const other = new URL(oauth.authorizationUrl!);
    other.searchParams.set('resource', 'https://elsewhere.example/');
    const r1 = await browser.follow(other.href);
    expect(new URL(r1.location!).searchParams.get('error')).toBe('invalid_target');
    const noPkce = new URL(oauth.authorizationUrl!);
    noPkce.searchParams.delete('code_challenge');
    noPkce.searchParams.delete('code_challenge_method');
    const r2 = await browser.follow(noPkce.href);
    expect(new URL(r2.location!).searchParams.get('error')).toBe('invalid_request');
  });
});

describe('secrets', () => {
  it('no MCP response carried an API key or an OAuth token', () => {
    expect(transcript.length).toBeGreaterThan(10);
    for (const text of transcript) {
      expect(text.includes(aliceKey.secret)).toBe(false);
      expect(/"(access|refresh)_token"/.test(text)).toBe(false);
    }
  });
});
