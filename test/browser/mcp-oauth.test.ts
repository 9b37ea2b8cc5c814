import { auth, discoverOAuthServerInfo, exchangeAuthorization, registerClient, startAuthorization } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InvalidGrantError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestAccount, type Json, type TestAccount } from '../helpers/accounts.ts';
import { launchChromium, openConsole, type ConsolePage } from '../helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { MemoryOAuthClient } from '../helpers/oauth-client.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The MCP TypeScript SDK's own OAuth client, unmodified, against the built-in authorization server and
// the product's tools: auth() with an OAuthClientProvider that configures no scope, the user's part
// (sign-in, consent) in headless Chromium on the server's own pages, then tools/list and tools/call
// through the SDK's transport, and the disconnect in the console ending the access on the next call.
// A connected agent searches its memory with query_context and finds what it wrote (spec 5 grants an
// OAuth connection memory.read and memory.write, never query: native memory only, said so).

let db: TestDatabase;
let stack: McpStack;
let browser: Browser;
let tab: ConsolePage;
let alice: TestAccount;
let worker: Awaited<ReturnType<typeof startWorker>>;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  alice = await createTestAccount(db.orm);
  browser = await launchChromium();
  tab = await openConsole(browser, stack.baseUrl);
});

afterAll(async () => {
  await tab?.context.close();
  await browser?.close();
  await worker?.stop();
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
async function consentInBrowser(page: Page, authorizationUrl: URL, grant: { read: boolean; write: boolean }, redirect = REDIRECT) {
  const callback = page.waitForRequest((r) => r.url().startsWith(redirect));
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

/** Writes a message as the connected agent, waits for its memory event, then finds it with query_context. */
async function expectRecall(client: Client, peer: string) {
  await client.callTool({ name: 'create_peer', arguments: { peer_id: peer } });
  await client.callTool({ name: 'create_session', arguments: { session_id: `${peer}-chat` } });
  const add = await client.callTool({
    name: 'add_messages_to_session',
    arguments: { session_id: `${peer}-chat`, peer_id: peer, messages: [{ role: 'user', content: 'My bicycle is a green Bianchi with a wicker basket.' }] },
  });
  expect(add.isError, JSON.stringify(add.content)).toBeFalsy();
  const eventId = (add.structuredContent as Json).event_id as string;
  const deadline = Date.now() + 60_000;
  let status = 'queued';
  while (['queued', 'running', 'processing'].includes(status) && Date.now() < deadline) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    status = ((await client.callTool({ name: 'get_event_status', arguments: { event_id: eventId } })).structuredContent as Json).status;
  }
  expect(status).toBe('succeeded');
  const found = await client.callTool({ name: 'query_context', arguments: { query: 'What colour is the bicycle?', peer_ids: [peer] } });
  expect(found.isError, JSON.stringify(found.content)).toBeFalsy();
  const text = (found.content as { text: string }[])[0]!.text;
  expect(text).toMatch(/^Searched this account's native memory only/);
  expect(text).toContain('green Bianchi');
  expect((found.structuredContent as Json).operation.credits.cost).toBe(0);
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
    const { tools } = await client.listTools();
    // A read-only connection is offered the read tools only (7 of 14), query_context among them.
    expect(tools.map((t) => t.name).sort()).toEqual([
      'get_claim', 'get_claim_history', 'get_event_status', 'get_peer_representation', 'get_queue_status', 'list_claims', 'query_context',
    ]);
    for (const t of tools) expect(t.outputSchema, t.name).toMatchObject({ type: 'object' });
    const search = await client.callTool({ name: 'query_context', arguments: { query: 'anything remembered?' } });
    expect(search.isError, JSON.stringify(search.content)).toBeFalsy();
    expect(search.structuredContent).toMatchObject({ coverage: { searched: ['messages', 'claims'] }, limitations: [{ code: 'sources_not_searched' }] });
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

  it('auth() granted read and write: the agent writes a message and finds it with query_context', async () => {
    const oauth = new MemoryOAuthClient();
    expect(await auth(oauth, { serverUrl: stack.mcpUrl })).toBe('REDIRECT');
    const { code } = await consentInBrowser(tab.page, oauth.authorizationUrl!, { read: true, write: true });
    expect(await auth(oauth, { serverUrl: stack.mcpUrl, authorizationCode: code })).toBe('AUTHORIZED');
    const client = new Client({ name: 'auth-recall', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: oauth }));
    await expectRecall(client, 'sdk-agent');
    await client.close();
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
    expect((await client.listTools()).tools).toHaveLength(14);
    await expectRecall(client, 'granted-write');
    await client.close();
  });
});

describe('mcp-remote (how desktop agents connect), OAuth end to end, consent in Chromium', () => {
  // mcp-remote, unmodified, as a desktop agent runs it: a stdio MCP server proxying to the endpoint, doing
  // OAuth itself (dynamic registration, PKCE, its own loopback callback listener). BROWSER=true keeps
  // its opener from launching anything; the URL it prints is what the user would open, here in Chromium.
  let configDir: string;
  beforeAll(async () => {
    configDir = await mkdtemp(path.join(tmpdir(), 'cairn-mcp-remote-'));
  });
  afterAll(async () => {
    await rm(configDir, { recursive: true, force: true });
  });

  it('connects, lists the tools, writes a message and finds it with query_context', async () => {
    const callbackPort = 27000 + Math.floor(Math.random() * 900);
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [path.resolve('node_modules/mcp-remote/dist/proxy.js'), stack.mcpUrl, String(callbackPort), '--host', '127.0.0.1'],
      env: { ...(process.env as Record<string, string>), MCP_REMOTE_CONFIG_DIR: configDir, BROWSER: 'true' },
      stderr: 'pipe',
    });
    let log = '';
    const authorizationUrl = new Promise<URL>((resolve) => {
      transport.stderr!.on('data', (chunk: Buffer) => {
        log += chunk.toString();
        const m = /Please authorize this client by visiting:\s+(\S+)/.exec(log);
        if (m) resolve(new URL(m[1]!));
      });
    });
    const client = new Client({ name: 'desktop-agent', version: '1.0.0' });
    const connected = client.connect(transport);
    const url = await authorizationUrl;
    const redirect = url.searchParams.get('redirect_uri')!;
    expect(redirect.startsWith(`http://127.0.0.1:`), redirect).toBe(true);
    await consentInBrowser(tab.page, url, { read: true, write: true }, redirect);
    await connected;
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toHaveLength(14);
    expect(names).toContain('query_context');
    await expectRecall(client, 'desktop-agent');
    await client.close();
  });
});
