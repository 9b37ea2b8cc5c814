import { createServer, type Server } from 'node:http';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type McpTool } from '../../../api/mcp/tools/registry.ts';
import { freePort } from '../../helpers/ephemeral.ts';
import { linkExternalIdentity } from '../../../core/oauth/external.ts';
import { ApiClient, createTestAccount, signIn, type Json, type TestAccount } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// An external identity provider instead of the built-in server (MCP_AUTH_ISSUER). The provider is a
// local HTTP server speaking its protocol (discovery metadata and a JWKS); its access tokens are JWTs
// signed here with its key, as its token endpoint would issue them.

const probe = defineTool({
  name: 'probe',
  title: 'probe',
  description: 'Test tool.',
  input: z.strictObject({}),
  output: z.object({ account: z.string(), scopes: z.array(z.string()) }),
  scopes: ['memory.read'],
  annotations: { readOnlyHint: true },
  run: async (ctx) => ({ data: { account: ctx.principal.email, scopes: [...ctx.principal.scopes] } }),
});

let db: TestDatabase;
let stack: McpStack;
let idp: Server;
let issuer: string;
let privateKey: CryptoKey;
let alice: TestAccount;
let aliceCookie: string;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  const keys = await generateKeyPair('RS256');
  privateKey = keys.privateKey;
  const jwk = { ...(await exportJWK(keys.publicKey)), kid: 'k1', alg: 'RS256', use: 'sig' };
  const port = await freePort();
  issuer = `http://127.0.0.1:${port}/tenant`;
  idp = createServer((req, res) => {
    const send = (body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.url === '/.well-known/oauth-authorization-server/tenant') {
      return send({
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        registration_endpoint: `${issuer}/register`,
        jwks_uri: `${issuer}/jwks`,
        code_challenge_methods_supported: ['S256'],
        x_vendor_internal_admin_endpoint: `${issuer}/admin`,
      });
    }
    if (req.url === '/tenant/jwks') return send({ keys: [jwk] });
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => idp.listen(port, '127.0.0.1', resolve));
  stack = await startMcpStack({
    orm: db.orm,
    temporal,
    tools: [probe] as unknown as McpTool[],
    env: { MCP_AUTH_ISSUER: issuer },
  });
  alice = await createTestAccount(db.orm);
  aliceCookie = await signIn(new ApiClient(stack.baseUrl), alice);
});
afterAll(async () => {
  await stack?.close();
  await new Promise((r) => idp?.close(r));
  await temporal.close();
  await db?.drop();
});

const token = (claims: Record<string, unknown> = {}, opts: { aud?: string; iss?: string; iat?: number; exp?: number } = {}) => {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ email: alice.email, email_verified: true, client_id: 'ext-client', ...claims })
    .setProtectedHeader({ alg: 'RS256', kid: 'k1' })
    .setIssuer(opts.iss ?? issuer)
    .setAudience(opts.aud ?? stack.mcpUrl)
    .setIssuedAt(opts.iat ?? now)
    .setExpirationTime(opts.exp ?? now + 600)
    .sign(privateKey);
};

const apps = async () => (await new ApiClient(stack.baseUrl).get('/v1/account/connected-apps', { as: { cookie: aliceCookie } })).body.connectedApps;

const call = async (bearer: string) => {
  const res = await fetch(stack.mcpUrl, {
    method: 'POST',
    headers: { authorization: `Bearer ${bearer}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'probe', arguments: {} } }),
  });
  const text = await res.text();
  return { status: res.status, body: text ? (JSON.parse(text) as Json) : undefined };
};

describe('external identity provider', () => {
  it('the MCP endpoint names it and republishes only allowlisted fields of its metadata; no built-in server is mounted', async () => {
    const prm = (await (await fetch(new URL('.well-known/oauth-protected-resource', stack.mcpUrl))).json()) as Json;
    expect(prm.authorization_servers).toEqual([issuer]);
    // The provider's scope names are its own: none are suggested to clients.
    expect(prm.scopes_supported).toBeUndefined();
    const as = (await (await fetch(new URL('.well-known/oauth-authorization-server', stack.mcpUrl))).json()) as Json;
    expect(as).toEqual({
      issuer,
      authorization_endpoint: `${issuer}/authorize`,
      token_endpoint: `${issuer}/token`,
      registration_endpoint: `${issuer}/register`,
      jwks_uri: `${issuer}/jwks`,
      code_challenge_methods_supported: ['S256'],
    });
    expect((await fetch(`${stack.baseUrl}/oauth/.well-known/openid-configuration`)).status).toBe(404);
  });

  it('a valid token asks to connect; the application has no access until the user allows it at Cairn', async () => {
    const first = await call(await token());
    expect(first.status).toBe(403);
    expect(first.body.error.message).toContain(`${stack.baseUrl}/apps`);
    const api = new ApiClient(stack.baseUrl);
    const pending = (await apps()).find((a: Json) => a.registrations[0].clientId === 'ext-client');
    expect(pending).toMatchObject({ redirectUris: [], scopes: [], status: 'pending', registrations: [{ clientId: 'ext-client', scopes: [] }] });
    // Asking again changes nothing until the user decides.
    expect((await call(await token())).status).toBe(403);
    const allowed = await api.call('PUT', `/v1/account/connected-apps/${pending.id}`, { as: { cookie: aliceCookie }, body: { scopes: ['memory.read'] } });
    expect(allowed.status, JSON.stringify(allowed.body)).toBe(200);
    expect(allowed.body.connectedApp).toMatchObject({ scopes: ['memory.read'], status: 'active' });
    const res = await call(await token());
    expect(res.status).toBe(200);
    // Exactly the allowed scope (spec 4.6, 5): no `query`.
    expect(res.body.result.structuredContent).toEqual({ account: alice.email, scopes: ['memory.read'] });
  });

  it('allowing needs the CSRF proof and at least one scope; another account cannot allow it', async () => {
    expect((await call(await token({ client_id: 'ext-csrf' }))).status).toBe(403);
    const pending = (await apps()).find((a: Json) => a.registrations[0].clientId === 'ext-csrf');
    const api = new ApiClient(stack.baseUrl);
    const path = `/v1/account/connected-apps/${pending.id}`;
    expect((await api.call('PUT', path, { as: { cookie: aliceCookie }, body: { scopes: ['memory.read'] }, csrf: false })).status).toBe(403);
    expect((await api.call('PUT', path, { as: { cookie: aliceCookie }, body: { scopes: [] } })).status).toBe(400);
    const bob = await createTestAccount(db.orm);
    const bobCookie = await signIn(api, bob);
    expect((await api.call('PUT', path, { as: { cookie: bobCookie }, body: { scopes: ['memory.read'] } })).status).toBe(404);
    expect((await call(await token({ client_id: 'ext-csrf' }))).status).toBe(403);
  });

  it('an operator link of the subject stands in for a verified email', async () => {
    const unverified = { client_id: 'ext-linked', sub: 'idp-user-42', email: undefined, email_verified: undefined };
    expect((await call(await token(unverified))).status).toBe(401);
    await linkExternalIdentity(db.orm.em.fork(), { issuer, subject: 'idp-user-42', email: alice.email });
    expect((await call(await token(unverified))).status).toBe(403); // known now: waiting for the user's approval
    const pending = (await apps()).find((a: Json) => a.registrations[0].clientId === 'ext-linked');
    await new ApiClient(stack.baseUrl).call('PUT', `/v1/account/connected-apps/${pending.id}`, { as: { cookie: aliceCookie }, body: { scopes: ['memory.read'] } });
    expect((await call(await token(unverified))).body.result.structuredContent.account).toBe(alice.email);
  });

  it('refuses tokens for another audience or issuer, expired ones, unverified or unknown emails, unsigned ones', async () => {
    const now = Math.floor(Date.now() / 1000);
    const bad = [
      await token({}, { aud: 'https://other.example/' }),
      await token({}, { iss: 'https://other-issuer.example' }),
      await token({}, { iat: now - 7200, exp: now - 3600 }),
      await token({ email_verified: false }),
      await token({ email_verified: undefined }),
      await token({ email_verified: 'yes' }),
      await token({ email: 'nobody@example.com' }),
      await token({ client_id: undefined }),
      `${(await token()).split('.').slice(0, 2).join('.')}.AAAA`,
    ];
    for (const t of bad) expect((await call(t)).status).toBe(401);
  });

  it('revoking the connection refuses tokens issued before it; a later token asks again', async () => {
    const api = new ApiClient(stack.baseUrl);
    const old = await token({ client_id: 'ext-two' });
    expect((await call(old)).status).toBe(403);
    const app = (await apps()).find((a: Json) => a.registrations[0].clientId === 'ext-two');
    await api.call('PUT', `/v1/account/connected-apps/${app.id}`, { as: { cookie: aliceCookie }, body: { scopes: ['memory.read'] } });
    expect((await call(old)).status).toBe(200);
    expect((await api.delete(`/v1/account/connected-apps/${app.id}`, { as: { cookie: aliceCookie } })).status).toBe(200);
    expect((await call(old)).status).toBe(401);
    // A later token asks again, and waits for the user like the first time.
    const fresh = await token({ client_id: 'ext-two' }, { iat: Math.floor(Date.now() / 1000) + 2 });
    expect((await call(fresh)).status).toBe(403);
    expect((await call(old)).status).toBe(401);
  });
});
