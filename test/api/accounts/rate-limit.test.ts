import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter, type RateLimiter } from '../../../core/metering/rate-limit.ts';
import { ApiClient, cliSignIn, createKey, createTestAccount, expectError, signIn, sqlClient, type Sql } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { connectWithOauth } from '../../helpers/oauth-client.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// One account-wide request window (spec 5 rule 5) for every kind of credential: API keys, CLI session
// tokens, browser sessions and MCP OAuth tokens draw from the same RATE_LIMIT_PER_MINUTE, so no
// credential floods the service around it.

const WINDOW = 8;
let db: TestDatabase;
let sql: Sql;
let stack: McpStack;
let rateLimiter: RateLimiter;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  rateLimiter = createRateLimiter(db.url, WINDOW);
  stack = await startMcpStack({ orm: db.orm, temporal, rateLimiter });
});
afterAll(async () => {
  await stack?.close();
  await rateLimiter?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

describe('the account-wide rate limit', () => {
  it('is shared by API keys, CLI sessions, browser sessions and MCP OAuth tokens', async () => {
    const client = new ApiClient(stack.baseUrl);
    const account = await createTestAccount(db.orm);
    const cookie = await signIn(client, account);
    const key = (await createKey(client, { cookie }, { scopes: ['memory.read'] })).secret;
    const cli = await cliSignIn(client, cookie);
    const { oauth, client: mcp } = await connectWithOauth({ mcpUrl: stack.mcpUrl, baseUrl: stack.baseUrl, cookie, scopes: ['memory.read'] });
    await mcp.close();
    // Setting up spent part of the window; start a fresh one, as the next minute would.
    await sql.query('delete from rate_limit');

    const mcpPing = () =>
      fetch(stack.mcpUrl, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${oauth.saved!.access_token}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json',
          'mcp-protocol-version': '2025-11-25',
        },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' }),
      });
    const calls = {
      apiKey: async () => (await client.get('/v1/access', { as: { bearer: key } })).status,
      cli: async () => (await client.get('/v1/auth/cli/session', { as: { bearer: cli } })).status,
      browser: async () => (await client.get('/v1/account/usage', { as: { cookie } })).status,
      oauth: async () => (await mcpPing()).status,
    };
    const statuses: string[] = [];
    for (let i = 0; i < WINDOW / 4; i++) for (const [kind, call] of Object.entries(calls)) statuses.push(`${kind} ${await call()}`);
    expect(statuses).toEqual(Array.from({ length: WINDOW / 4 }, () => Object.keys(calls).map((k) => `${k} 200`)).flat());
    for (const [kind, call] of Object.entries(calls)) expect(`${kind} ${await call()}`).toBe(`${kind} 429`);
    const refused = await client.get('/v1/account/usage', { as: { cookie } });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
