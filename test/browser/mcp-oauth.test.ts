import { randomUUID } from 'node:crypto';
import { auth, discoverOAuthServerInfo, exchangeAuthorization, registerClient, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAccount, type TestAccount } from '../helpers/accounts.ts';
import { launchChromium, openConsole, type ConsolePage } from '../helpers/browser.ts';
import { memoryRows } from '../helpers/memory-rows.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { MemoryOAuthClient } from '../helpers/oauth-client.ts';
import { testTemporalClient } from '../helpers/services.ts';

// The MCP TypeScript SDK's own OAuth client, unmodified, against the built-in authorization server and
// the product's tools: auth() with an OAuthClientProvider that configures no scope, the user's part
// (sign-in, consent) in headless Chromium on the server's own pages, then tools/list and tools/call
// through the SDK's transport, and the disconnect in the console ending the access on the next call.

let db: TestDatabase;
let stack: McpStack;
let browser: Browser;
let tab: ConsolePage;
let alice: TestAccount;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal });
  alice = await createTestAccount(db.orm);
  browser = await launchChromium();
  tab = await openConsole(browser, stack.baseUrl);
});

afterAll(async () => {
  await tab?.context.close();
  await browser?.close();
  await stack?.close();
  await temporal.close();
  await db?.drop();
});

const REDIRECT = 'http://127.0.0.1:9/oauth/callback';

/**
 * The user's part in Chromium: open the authorization URL, sign in on the server's page if asked,
 * choose the access, Allow. The client's loopback redirect target is answered here, as the client's
 * own listener would answer it; returns the boxes the consent page had ticked and the code.
 */
async function consentInBrowser(page: Page, authorizationUrl: URL, grant: { read: boolean; write: boolean }) {
  const callback = page.waitForRequest((r) => r.url().startsWith(REDIRECT));
  await page.goto(authorizationUrl.href);
  const signIn = page.getByRole('button', { name: 'Sign in' });
  const allow = page.getByRole('button', { name: 'Allow' });
  await signIn.or(allow).waitFor();
  if (await signIn.isVisible()) {
    await page.getByLabel('Email').fill(alice.email);
    await page.getByLabel('Password').fill(alice.password);
    await signIn.click();
  }
  await allow.waitFor();
  const read = page.getByRole('checkbox', { name: /Read memory/ });
  const write = page.getByRole('checkbox', { name: /Write memory/ });
  const preselected = { read: await read.isChecked(), write: await write.isChecked() };
  await read.setChecked(grant.read);
  await write.setChecked(grant.write);
  await allow.click();
  const url = new URL((await callback).url());
  expect(url.searchParams.get('error'), url.href).toBeNull();
  return { preselected, code: url.searchParams.get('code')! };
}

describe('the MCP SDK client, OAuth end to end, consent in Chromium', () => {
  beforeAll(async () => {
    await tab.context.route(`${REDIRECT}**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'You can close this window.' }));
  });

  it('auth() with no configured scope: read-only consent, tools listed and called, writes refused; disconnected in the console, the next call is 401', async () => {
    const oauth = new MemoryOAuthClient('Chromium MCP client');
    expect(oauth.clientMetadata.scope).toBeUndefined();
    expect(await auth(oauth, { serverUrl: stack.mcpUrl })).toBe('REDIRECT');
    const authorizationUrl = oauth.authorizationUrl!;
    // With no scope of its own, the SDK asks for what the protected-resource metadata lists.
    expect(authorizationUrl.searchParams.get('scope')).toBe('memory.read memory.write');
    const { page } = tab;
    const { preselected, code } = await consentInBrowser(page, authorizationUrl, { read: true, write: false });
    expect(preselected).toEqual({ read: true, write: true });
    expect(await auth(oauth, { serverUrl: stack.mcpUrl, authorizationCode: code })).toBe('AUTHORIZED');
    expect(oauth.saved).toMatchObject({ access_token: expect.any(String), refresh_token: expect.any(String), scope: 'memory.read' });

    /** The MCP endpoint's answers to POSTs, as the SDK's transport saw them (its GET for a stream is 405). */
    const statuses: number[] = [];
    const recording: typeof fetch = async (input, init) => {
      const res = await fetch(input, init);
      if (String(input instanceof Request ? input.url : input).startsWith(stack.mcpUrl) && init?.method === 'POST') statuses.push(res.status);
      return res;
    };
    const client = new Client({ name: 'chromium-oauth-test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: oauth, fetch: recording }));
    // A read-only connection is offered the tools it can call: the reads and query_context, no write.
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_claim', 'get_claim_history', 'get_event_status', 'get_peer_representation', 'get_queue_status', 'list_claims', 'query_context',
    ]);
    for (const t of tools) expect(t.outputSchema, t.name).toMatchObject({ type: 'object' });
    // query_context searches the account's native memory with memory.read, and says so.
    const rows = memoryRows(db.orm);
    const [peerId, sessionId] = [await rows.peer(alice.id, 'alice'), await rows.session(alice.id, 'chat')];
    await rows.message(alice.id, { peerId, sessionId, content: 'My kayak is moored at the Quillmarsh jetty.' });
    const found = await client.callTool({ name: 'query_context', arguments: { query: 'Where is the kayak moored?', mode: 'evidence' } });
    expect(found.isError, JSON.stringify(found.structuredContent)).toBeFalsy();
    expect(found.structuredContent).toMatchObject({ coverage: { searched: ['messages', 'claims'] } });
    expect(JSON.stringify(found.structuredContent)).toContain('Quillmarsh jetty');
    const sources = await client.callTool({ name: 'query_context', arguments: { query: 'kayak', source_ids: [randomUUID()] } });
    expect(sources).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden' } } });
    const queue = await client.callTool({ name: 'get_queue_status', arguments: {} });
    expect(queue.isError).toBeFalsy();
    expect(queue.structuredContent).toMatchObject({ schemaVersion: 'service-memory-queue-status-v1', workspace: 'default' });
    const write = await client.callTool({ name: 'create_peer', arguments: { peer_id: 'someone' } });
    expect(write).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden' } } });
    expect(statuses.every((s) => s === 200 || s === 202), statuses.join()).toBe(true);

    // The console lists it (signed in through the authorization server's page): name, scopes, first
    // connected and last used; disconnecting ends its access.
    await page.goto('/apps');
    const row = page.getByRole('row', { name: /Chromium MCP client/ });
    await row.waitFor();
    const cells = await row.getByRole('cell').allInnerTexts();
    expect(cells[0]).toContain('memory.read');
    expect(cells[0]).not.toContain('memory.write');
    expect(cells[1]).toMatch(/\d{4}/);
    expect(cells[2]).toMatch(/\d{4}/);
    await page.getByRole('button', { name: 'Disconnect Chromium MCP client' }).click();
    await page.getByText('Disconnected Chromium MCP client.').waitFor();

    // The next call is 401; the SDK then tries its refresh token, which is gone too (invalid_grant).
    statuses.length = 0;
    await expect(client.callTool({ name: 'get_queue_status', arguments: {} })).rejects.toBeInstanceOf(InvalidGrantError);
    expect(statuses[0]).toBe(401);
    await client.close().catch(() => {});
    expect(tab.problems).toEqual([]);
    expect(tab.foreign.filter((u) => !u.startsWith(REDIRECT))).toEqual([]);
  });

  it('an authorization request that names no scope at all: the defaults are offered, granted and named in the token response', async () => {
    const { authorizationServerUrl, authorizationServerMetadata: metadata } = await discoverOAuthServerInfo(stack.mcpUrl);
    const clientInformation = await registerClient(authorizationServerUrl, {
      metadata,
      clientMetadata: { client_name: 'Scope-less client', redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none' },
    });
    const resource = new URL(stack.mcpUrl);
    const { authorizationUrl, codeVerifier } = await startAuthorization(authorizationServerUrl, { metadata, clientInformation, redirectUrl: REDIRECT, resource });
    expect(authorizationUrl.searchParams.has('scope')).toBe(false);
    const { preselected, code } = await consentInBrowser(tab.page, authorizationUrl, { read: true, write: true });
    expect(preselected).toEqual({ read: true, write: true });
    const tokens = await exchangeAuthorization(authorizationServerUrl, {
      metadata, clientInformation, authorizationCode: code, codeVerifier, redirectUri: REDIRECT, resource,
    });
    expect(tokens.scope).toBe('memory.read memory.write');
    const client = new Client({ name: 'scope-less', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(resource, { requestInit: { headers: { authorization: `Bearer ${tokens.access_token}` } } }));
    const peer = await client.callTool({ name: 'create_peer', arguments: { peer_id: 'granted-write' } });
    expect(peer.structuredContent).toMatchObject({ schemaVersion: 'service-memory-peer-v1', id: 'granted-write' });
    await client.close();
  });
});
