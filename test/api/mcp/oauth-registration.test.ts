import { createServer, type Server, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../helpers/ephemeral.ts';
import { createRateLimiter, type RateLimiter } from '../../../core/metering/rate-limit.ts';
import { ApiClient, createTestAccount, signIn, sqlClient, type Json, type Sql } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { connectWithOauth } from '../../helpers/oauth-client.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// Dynamic client registration at the built-in authorization server (RFC 7591) is open, so it is kept
// clean: URLs the server would fetch for a registration go through the SSRF-safe fetch (no connection
// to loopback, private or link-local addresses, whatever the name), unused registrations expire, and
// each client address may register only so often.

let db: TestDatabase;
let sql: Sql;
let stack: McpStack;
let rateLimiter: RateLimiter;
let probe: Server;
let probePort: number;
const connections: Socket[] = [];
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  rateLimiter = createRateLimiter(db.url, 600, undefined, { registrationsPerHour: 3 });
  stack = await startMcpStack({ orm: db.orm, temporal, rateLimiter, env: { TRUST_PROXY: 'loopback', OAUTH_UNUSED_CLIENT_TTL_HOURS: '2' } });
  // A TCP listener on loopback that only counts who connects: a port a scanner would look for.
  probePort = await freePort();
  probe = createServer((socket) => {
    connections.push(socket);
    socket.destroy();
  });
  await new Promise<void>((resolve) => probe.listen(probePort, '127.0.0.1', resolve));
});
afterAll(async () => {
  await stack?.close();
  await rateLimiter?.close();
  await new Promise((r) => probe?.close(r));
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

let address = 10;
/** A registration from its own client address (through the trusted loopback proxy), unless one is given. */
async function register(metadata: Record<string, unknown>, from = `198.51.100.${address++}`, path = '/oauth/reg') {
  const res = await fetch(`${stack.baseUrl}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': from },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1:9/cb'], token_endpoint_auth_method: 'none', ...metadata }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as Json };
}

describe('dynamic client registration', () => {
  it('never connects to a loopback address named by sector_identifier_uri (no port scanning by registration)', async () => {
    for (const host of ['127.0.0.1', 'localhost', '[::ffff:127.0.0.1]']) {
      const res = await register({ sector_identifier_uri: `https://${host}:${probePort}/sector.json` });
      expect(res.status, JSON.stringify(res.body)).toBe(400);
      expect(res.body.error).toBe('invalid_client_metadata');
    }
    await new Promise((r) => setTimeout(r, 200));
    expect(connections.length).toBe(0);
  });

  it('issues no registration access token and gives an unused registration an expiry', async () => {
    const res = await register({ client_name: 'Unused client' });
    expect(res.status, JSON.stringify(res.body)).toBe(201);
    expect(res.body.registration_access_token).toBeUndefined();
    const [row] = await sql.query<{ hours: number }>(
      `select extract(epoch from expires_at - now()) / 3600 as hours from oauth_payload where kind = 'Client' and client_id = $1`,
      [res.body.client_id],
    );
    expect(Number(row!.hours)).toBeGreaterThan(1.9);
    expect(Number(row!.hours)).toBeLessThanOrEqual(2);
    // Once expired (as time would have it), the client is unknown to the server.
    await sql.query(`update oauth_payload set expires_at = now() - interval '1 second' where kind = 'Client' and client_id = $1`, [res.body.client_id]);
    const auth = await fetch(
      `${stack.baseUrl}/oauth/auth?client_id=${res.body.client_id}&response_type=code&redirect_uri=${encodeURIComponent('http://127.0.0.1:9/cb')}` +
        '&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256',
      { redirect: 'manual' },
    );
    expect(await auth.text()).toContain('client is invalid');
  });

  it('an authorized client lives as long as its grant', async () => {
    const client = new ApiClient(stack.baseUrl);
    const cookie = await signIn(client, await createTestAccount(db.orm));
    const { oauth, client: mcp } = await connectWithOauth({ mcpUrl: stack.mcpUrl, baseUrl: stack.baseUrl, cookie, scopes: ['memory.read'] });
    await mcp.close();
    const [row] = await sql.query<{ days: number }>(
      `select extract(epoch from expires_at - now()) / 86400 as days from oauth_payload where kind = 'Client' and client_id = $1`,
      [oauth.info!.client_id],
    );
    // OAUTH_REFRESH_TOKEN_TTL_DAYS (30) is the grant's lifetime.
    expect(Number(row!.days)).toBeGreaterThan(29);
  });

  it('limits registrations per client address (429 with retry-after); other addresses are not affected', async () => {
    const from = '203.0.113.50';
    for (let i = 0; i < 3; i++) expect((await register({}, from)).status).toBe(201);
    const refused = await register({}, from);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    expect((await register({}, '203.0.113.51')).status).toBe(201);
  });

  it('counts a registration at any spelling the authorization server accepts (case, trailing slash, doubled slash)', async () => {
    const from = '203.0.113.60';
    const spellings = ['/oauth/REG', '/oauth/reg/', '/oauth/Reg?x=1', '/oauth//reg', '/oauth/%72eg'];
    const statuses: number[] = [];
    for (const path of spellings) statuses.push((await register({}, from, path)).status);
    // Three are allowed; whatever the spelling, the rest are refused (a spelling the server does not
    // route is its 404, which is no registration either).
    expect(statuses.filter((s) => s === 201).length).toBeLessThanOrEqual(3);
    expect(statuses.slice(3).every((s) => s === 429 || s === 404)).toBe(true);
    expect(statuses).toContain(429);
  });
});
