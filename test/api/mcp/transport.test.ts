import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { AddressInfo } from 'node:net';
import { request as httpRequest } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type McpTool } from '../../../api/mcp/tools/registry.ts';
import { createRateLimiter } from '../../../core/metering/rate-limit.ts';
import { ApiClient, cliSignIn, createKey, createTestAccount, signIn, type CreatedKey, type Json } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// The hosted MCP endpoint's HTTP rules (spec 2.5, 4.6 rules 1-5, 9), over real HTTP, with raw requests
// for each status code and the MCP SDK's own client for the lifecycle. The tool here is a test tool
// that exercises the registry (scopes, structured results); the product's tools have their own tests.

const probe = defineTool({
  name: 'probe',
  title: 'Probe',
  description: 'Echoes its input and who is calling (test only).',
  input: z.strictObject({ word: z.string().min(1).max(40) }),
  output: z.object({ word: z.string(), account: z.string(), kind: z.string() }),
  scopes: ['memory.read'],
  annotations: { readOnlyHint: true },
  run: async (ctx, input) => ({ data: { word: input.word, account: ctx.principal.email, kind: ctx.principal.kind } }),
});
/** Returns data its output schema does not admit: a server bug the registry must not pass on. */
const misfit = defineTool({
  name: 'misfit',
  title: 'Misfit',
  description: 'Returns data of the wrong shape (test only).',
  input: z.strictObject({}),
  output: z.object({ word: z.string() }),
  scopes: ['memory.read'],
  annotations: { readOnlyHint: true },
  run: async () => ({ data: { word: 42 as unknown as string } }),
});
const TOOLS = [probe, misfit] as unknown as McpTool[];

let db: TestDatabase;
let stack: McpStack;
let client: ApiClient;
let full: CreatedKey;
let ingestOnly: CreatedKey;
let revoked: CreatedKey;
let cliToken: string;
const temporal = testTemporalClient();
/** Every MCP response of this file, to prove none ever contains a credential. */
const transcript: string[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal, tools: TOOLS });
  client = new ApiClient(stack.baseUrl);
  const account = await createTestAccount(db.orm);
  const cookie = await signIn(client, account);
  full = await createKey(client, { cookie }, { scopes: ['memory.read', 'memory.write', 'query'] });
  ingestOnly = await createKey(client, { cookie }, { scopes: ['ingest'] });
  revoked = await createKey(client, { cookie }, { scopes: ['memory.read'] });
  expect((await client.delete(`/v1/account/api-keys/${revoked.id}`, { as: { cookie } })).status).toBe(200);
  cliToken = await cliSignIn(client, cookie);
});
afterAll(async () => {
  await stack?.close();
  await temporal.close();
  await db?.drop();
});

let rpcId = 1;
const msg = (method: string, params?: Json) => ({ jsonrpc: '2.0', id: rpcId++, method, ...(params ? { params } : {}) });
const init = (protocolVersion: string) =>
  msg('initialize', { protocolVersion, capabilities: {}, clientInfo: { name: 'test', version: '1.0.0' } });

type Sent = { status: number; headers: Headers; text: string; body: Json };
async function post(
  body: unknown,
  opts: { bearer?: string | null; accept?: string; contentType?: string; version?: string | null; origin?: string; raw?: string | Buffer; url?: string } = {},
): Promise<Sent> {
  const headers: Record<string, string> = {
    accept: opts.accept ?? 'application/json, text/event-stream',
    'content-type': opts.contentType ?? 'application/json',
  };
  const bearer = opts.bearer === undefined ? full.secret : opts.bearer;
  if (bearer) headers.authorization = `Bearer ${bearer}`;
  const version = opts.version === undefined ? '2025-11-25' : opts.version;
  if (version) headers['mcp-protocol-version'] = version;
  if (opts.origin) headers.origin = opts.origin;
  const res = await fetch(opts.url ?? stack.mcpUrl, { method: 'POST', headers, body: (opts.raw ?? JSON.stringify(body)) as string });
  const text = await res.text();
  transcript.push(text + JSON.stringify([...res.headers]));
  return { status: res.status, headers: res.headers, text, body: text ? JSON.parse(text) : undefined };
}

function expectRpcError(res: Sent, status: number, code: string) {
  expect(res.status, res.text).toBe(status);
  expect(res.body).toEqual({
    jsonrpc: '2.0',
    id: null,
    error: { code: expect.any(Number), message: expect.any(String), data: { code, requestId: expect.any(String) } },
  });
}

describe('discovery metadata', () => {
  it('GET /.well-known/oauth-protected-resource is RFC 9728 metadata naming this endpoint and its authorization server', async () => {
    const res = await fetch(new URL('.well-known/oauth-protected-resource', stack.mcpUrl));
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body).toMatchObject({
      resource: stack.mcpUrl,
      authorization_servers: [`${stack.baseUrl}/oauth`],
      // What an MCP client should request (the MCP SDK requests nothing when none are listed).
      scopes_supported: ['memory.read', 'memory.write'],
      bearer_methods_supported: ['header'],
    });
  });

  it('GET /.well-known/oauth-authorization-server republishes only allowlisted metadata of the authorization server', async () => {
    const res = await fetch(new URL('.well-known/oauth-authorization-server', stack.mcpUrl));
    expect(res.status).toBe(200);
    const body: Json = await res.json();
    expect(body).toMatchObject({
      issuer: `${stack.baseUrl}/oauth`,
      authorization_endpoint: `${stack.baseUrl}/oauth/auth`,
      token_endpoint: `${stack.baseUrl}/oauth/token`,
      registration_endpoint: `${stack.baseUrl}/oauth/reg`,
      revocation_endpoint: `${stack.baseUrl}/oauth/token/revocation`,
      code_challenge_methods_supported: ['S256'],
      grant_types_supported: ['authorization_code', 'refresh_token'],
    });
    expect(body.scopes_supported).toEqual(['openid', 'offline_access', 'profile', 'email', 'memory.read', 'memory.write']);
    expect(body.response_types_supported).toEqual(['code']);
    // The provider's own document (at both addresses clients try) says the same, and advertises only
    // the grants it supports: no implicit grant, no hybrid response types.
    for (const url of [`${stack.baseUrl}/oauth/.well-known/openid-configuration`, `${stack.baseUrl}/.well-known/oauth-authorization-server/oauth`]) {
      const own: Json = await (await fetch(url)).json();
      for (const k of ['issuer', 'authorization_endpoint', 'token_endpoint', 'registration_endpoint', 'revocation_endpoint', 'scopes_supported']) {
        expect(body[k], k).toEqual(own[k]);
      }
      expect(own.code_challenge_methods_supported).toEqual(['S256']);
      expect(own.grant_types_supported).toEqual(['authorization_code', 'refresh_token']);
      expect(own.response_types_supported).toEqual(['code']);
    }
  });

  it('the discovery documents name the configured public URL, whatever Host or X-Forwarded-Host a request carries', async () => {
    const forged = { host: 'evil.example:666', 'x-forwarded-host': 'evil.example', 'x-forwarded-proto': 'https' };
    for (const path of ['/oauth/.well-known/openid-configuration', '/.well-known/oauth-authorization-server/oauth']) {
      const res = await httpRequest(`${stack.baseUrl}${path}`, { headers: forged });
      expect(res.statusCode).toBe(200);
      const own = (await res.body.json()) as Json;
      expect(JSON.stringify(own)).not.toContain('evil.example');
      expect(own).toMatchObject({ issuer: `${stack.baseUrl}/oauth`, authorization_endpoint: `${stack.baseUrl}/oauth/auth`, registration_endpoint: `${stack.baseUrl}/oauth/reg` });
    }
  });

  it('the /mcp mount on the API port has its own resource metadata, also at the RFC 9728 path-inserted address', async () => {
    const mounted = `${stack.baseUrl}/mcp`;
    for (const url of [`${mounted}/.well-known/oauth-protected-resource`, `${stack.baseUrl}/.well-known/oauth-protected-resource/mcp`]) {
      const res = await fetch(url);
      expect(res.status, url).toBe(200);
      expect(((await res.json()) as Json).resource).toBe(mounted);
    }
    // RFC 8414 path-inserted authorization server metadata (what MCP clients try first).
    const as = await fetch(`${stack.baseUrl}/.well-known/oauth-authorization-server/oauth`);
    expect(as.status).toBe(200);
    expect(((await as.json()) as Json).issuer).toBe(`${stack.baseUrl}/oauth`);
  });
});

describe('GET and DELETE', () => {
  it('GET / is 405 with Allow: POST and MCP-Protocol-Version, and never opens an event stream', async () => {
    const res = await fetch(stack.mcpUrl, { headers: { accept: 'text/event-stream', authorization: `Bearer ${full.secret}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
    expect(res.headers.get('mcp-protocol-version')).toBe('2025-11-25');
    expect(res.headers.get('content-type')).not.toContain('text/event-stream');
    await res.text();
  });

  it('DELETE / is 405 as well (there are no sessions to end)', async () => {
    const res = await fetch(stack.mcpUrl, { method: 'DELETE', headers: { authorization: `Bearer ${full.secret}` } });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('POST');
  });

  it('GET / without a credential is 401 with the challenge (credentials are checked first)', async () => {
    const res = await fetch(stack.mcpUrl);
    expect(res.status).toBe(401);
    expect(res.headers.get('www-authenticate')).toContain('resource_metadata=');
  });
});

describe('POST rules (4.6)', () => {
  it('401 without credentials, with www-authenticate Bearer resource_metadata="<metadata URL>"', async () => {
    const res = await post(init('2025-11-25'), { bearer: null, version: null });
    expectRpcError(res, 401, 'unauthorized');
    expect(res.headers.get('www-authenticate')).toBe(
      `Bearer resource_metadata="${new URL('.well-known/oauth-protected-resource', stack.mcpUrl).href}"`,
    );
  });

  it('401 for a revoked key, a malformed bearer, a random token and a CLI session token', async () => {
    for (const bearer of [revoked.secret, 'not a key', `cairn_sk_${'x'.repeat(43)}`, 'A'.repeat(43), cliToken]) {
      const res = await post(msg('ping'), { bearer });
      expect(res.status, bearer.slice(0, 12)).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer resource_metadata="[^"]+oauth-protected-resource"/);
    }
  });

  it('406 when Accept lacks text/event-stream or application/json', async () => {
    expectRpcError(await post(msg('ping'), { accept: 'application/json' }), 406, 'validation_error');
    expectRpcError(await post(msg('ping'), { accept: 'text/event-stream' }), 406, 'validation_error');
    expect((await post(msg('ping'), { accept: '*/*' })).status).toBe(200);
  });

  it('415 when the body is not UTF-8 application/json', async () => {
    expectRpcError(await post(msg('ping'), { contentType: 'text/plain' }), 415, 'unsupported_media_type');
    expectRpcError(await post(msg('ping'), { contentType: 'application/json; charset=iso-8859-1' }), 415, 'unsupported_media_type');
    const latin1 = Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","x":"'), Buffer.from([0xe9]), Buffer.from('"}')]);
    expectRpcError(await post(null, { raw: latin1 }), 415, 'unsupported_media_type');
    expect((await post(msg('ping'), { contentType: 'application/json; charset=utf-8' })).status).toBe(200);
  });

  it('400 for a batch array, invalid JSON, an invalid envelope, a request with id null', async () => {
    expectRpcError(await post([msg('ping'), msg('ping')]), 400, 'validation_error');
    const bad = await post(null, { raw: '{"jsonrpc":"2.0","id":1,' });
    expectRpcError(bad, 400, 'validation_error');
    expect(bad.body.error.code).toBe(-32700);
    expectRpcError(await post({ id: 1, method: 'ping' }), 400, 'validation_error');
    expectRpcError(await post({ jsonrpc: '2.0', id: null, method: 'ping' }), 400, 'validation_error');
    expectRpcError(await post({ jsonrpc: '2.0', id: 1.5, method: 'ping' }), 400, 'validation_error');
  });

  it('400 for an unsupported MCP-Protocol-Version header (also versions the SDK knows but this endpoint does not offer)', async () => {
    for (const version of ['1999-01-01', '2025-03-26']) {
      expectRpcError(await post(msg('tools/list'), { version }), 400, 'validation_error');
    }
  });

  it('403 for a non-canonical Origin; the service origins and, bound to loopback, loopback origins are accepted', async () => {
    expectRpcError(await post(init('2025-11-25'), { version: null, origin: 'https://evil.example' }), 403, 'forbidden');
    expectRpcError(await post(msg('ping'), { origin: 'http://localhost.evil.example' }), 403, 'forbidden');
    expect((await post(msg('ping'), { origin: new URL(stack.mcpUrl).origin })).status).toBe(200);
    expect((await post(msg('ping'), { origin: stack.baseUrl })).status).toBe(200);
    // The stack is bound to 127.0.0.1 (HOST's default): loopback origins on any port are this machine.
    for (const origin of ['http://localhost:5173', 'http://127.0.0.1:6274', 'http://[::1]:6274']) {
      expect((await post(msg('ping'), { origin })).status, origin).toBe(200);
    }
  });

  it('202 with no body for notifications and client responses (results and errors)', async () => {
    for (const body of [
      { jsonrpc: '2.0', method: 'notifications/initialized' },
      { jsonrpc: '2.0', id: 7, result: {} },
      { jsonrpc: '2.0', id: null, error: { code: -32601, message: 'no' } },
    ]) {
      const res = await post(body);
      expect(res.status, JSON.stringify(body)).toBe(202);
      expect(res.text).toBe('');
    }
  });

  it('each request is authenticated on its own: after initialize, a request without credentials is 401', async () => {
    expect((await post(init('2025-11-25'), { version: null })).status).toBe(200);
    expect((await post(msg('tools/list'), { bearer: null })).status).toBe(401);
  });
});

describe('protocol versions (4.6 rule 2, 9)', () => {
  for (const v of ['2025-11-25', '2025-06-18']) {
    it(`initialize with ${v} negotiates ${v} and echoes it in MCP-Protocol-Version`, async () => {
      const m = init(v);
      const res = await post(m, { version: null });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: v, serverInfo: { name: 'cairn' } } });
      expect(res.headers.get('mcp-protocol-version')).toBe(v);
      expect(res.headers.get('mcp-session-id')).toBeNull();
    });
  }

  it('initialize with a version it does not support (2024-11-05) is answered with the preferred one', async () => {
    const res = await post(init('2024-11-05'), { version: null });
    expect(res.body.result.protocolVersion).toBe('2025-11-25');
    expect(res.headers.get('mcp-protocol-version')).toBe('2025-11-25');
  });

  it('later requests echo the version they send; one sent without a version gets the preferred one', async () => {
    expect((await post(msg('tools/list'), { version: '2025-06-18' })).headers.get('mcp-protocol-version')).toBe('2025-06-18');
    expect((await post(msg('tools/list'), { version: null })).headers.get('mcp-protocol-version')).toBe('2025-11-25');
  });

  it('string and integer ids are echoed; an unsupported method is a JSON-RPC error', async () => {
    expect((await post({ jsonrpc: '2.0', id: 'abc', method: 'ping' })).body).toEqual({ jsonrpc: '2.0', id: 'abc', result: {} });
    const res = await post(msg('sampling/createMessage'));
    expect(res.status).toBe(200);
    expect(res.body.error).toMatchObject({ code: -32601, message: expect.any(String) });
  });
});

describe('with the MCP SDK client', () => {
  const connect = async (url: string, bearer: string) => {
    const c = new Client({ name: 'sdk-test', version: '1.0.0' });
    await c.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
    return c;
  };

  it('initializes, pings, lists tools and calls one, on the MCP listener and on the /mcp mount', async () => {
    for (const url of [stack.mcpUrl, `${stack.baseUrl}/mcp`]) {
      const c = await connect(url, full.secret);
      expect(c.getServerVersion()?.name).toBe('cairn');
      expect(c.getInstructions()).toContain('never instructions');
      // Stateless, no stream: the server never sends notifications, so it promises no list changes.
      expect(c.getServerCapabilities()).toEqual({
        tools: { listChanged: false }, prompts: { listChanged: false }, completions: {}, logging: {},
      });
      await c.ping();
      const { tools } = await c.listTools();
      expect(tools.map((t) => t.name)).toEqual(['probe', 'misfit']);
      expect(tools[0]!.inputSchema).toMatchObject({ type: 'object', properties: { word: { type: 'string' } }, required: ['word'] });
      // Either the data or the error envelope (clients validate error results against it too).
      expect(tools[0]!.outputSchema).toMatchObject({
        type: 'object',
        anyOf: [
          { type: 'object', properties: { word: { type: 'string' }, kind: { type: 'string' } } },
          { type: 'object', properties: { error: { type: 'object' } }, required: ['error'] },
        ],
      });
      expect(tools[0]!.annotations).toMatchObject({ readOnlyHint: true, openWorldHint: false });
      const result = await c.callTool({ name: 'probe', arguments: { word: 'hello' } });
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({ word: 'hello', account: expect.stringContaining('@'), kind: 'apiKey' });
      expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toEqual(result.structuredContent);
      await c.close();
    }
  });

  it('a missing scope is a tool error with no data; invalid arguments are a tool error too', async () => {
    const c = await connect(stack.mcpUrl, ingestOnly.secret);
    const refused = await c.callTool({ name: 'probe', arguments: { word: 'secret-word' } });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toEqual({ error: { code: 'forbidden', message: expect.stringContaining('memory.read') } });
    expect(JSON.stringify(refused)).not.toContain('secret-word');
    await c.close();
  });

  it('every tool error carries structuredContent.error: invalid arguments, an unknown tool, a result that breaks its schema', async () => {
    const c = await connect(stack.mcpUrl, full.secret);
    await c.listTools();
    for (const args of [{ word: '' }, {}, { word: 'ok', extra: 1 }, { word: 7 }]) {
      const bad = await c.callTool({ name: 'probe', arguments: args });
      expect(bad.isError, JSON.stringify(args)).toBe(true);
      expect(bad.structuredContent).toEqual({ error: { code: 'validation_error', message: expect.stringMatching(/^Invalid arguments for probe: /) } });
      expect((bad.content as { text: string }[])[0]!.text).toMatch(/^validation_error: /);
    }
    const unknown = await c.callTool({ name: 'no_such_tool', arguments: {} });
    expect(unknown).toMatchObject({ isError: true, structuredContent: { error: { code: 'not_found', message: expect.stringContaining('no_such_tool') } } });
    const broken = await c.callTool({ name: 'misfit', arguments: {} });
    expect(broken).toMatchObject({ isError: true, structuredContent: { error: { code: 'internal_error' } } });
    expect(JSON.stringify(broken)).not.toContain('42');
    await c.close();
  });

  it('the SDK client surfaces a 401 when the key is revoked', async () => {
    await expect(connect(stack.mcpUrl, revoked.secret)).rejects.toThrow();
  });
});

describe('rate limit (429)', () => {
  it('is account-wide: once the window is spent, further MCP requests are 429 with retry-after', async () => {
    const rateLimiter = createRateLimiter(db.url, 3);
    const limited = await startMcpStack({ orm: db.orm, temporal, tools: TOOLS, rateLimiter });
    try {
      const url = limited.mcpUrl;
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await post(msg('ping'), { url })).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const res = await post(msg('ping'), { url });
      expectRpcError(res, 429, 'rate_limited');
      expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    } finally {
      await limited.close();
      await rateLimiter.close();
    }
  });
});

/** A raw POST with the Host header set (fetch does not let a caller choose Host). */
async function postWithHost(url: string, host: string, origin?: string) {
  const res = await httpRequest(url, {
    method: 'POST',
    headers: {
      host,
      ...(origin ? { origin } : {}),
      authorization: `Bearer ${full.secret}`,
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
    },
    body: JSON.stringify(msg('ping')),
  });
  const text = await res.body.text();
  transcript.push(text);
  return { status: res.statusCode, body: text ? JSON.parse(text) : undefined };
}

describe('Host and Origin (DNS rebinding)', () => {
  it('bound to loopback: the loopback names are accepted as Host on any port, other names are 403 before the credential is read', async () => {
    const port = new URL(stack.mcpUrl).port;
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, 'LOCALHOST', 'localhost:1']) {
      expect((await postWithHost(stack.mcpUrl, host)).status, host).toBe(200);
    }
    for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example', '127.0.0.1.nip.io', 'user@127.0.0.1', '127.0.0.1:port']) {
      const res = await postWithHost(stack.mcpUrl, host);
      expect(res.status, host).toBe(403);
      expect(res.body.error.data.code).toBe('forbidden');
    }
    // A rebinding page sends its own name in both Host and Origin.
    expect((await postWithHost(stack.mcpUrl, 'evil.example', 'http://evil.example')).status).toBe(403);
    // The /mcp mount on the API port applies the same rule.
    expect((await postWithHost(`${stack.baseUrl}/mcp`, 'evil.example')).status).toBe(403);
    expect((await postWithHost(`${stack.baseUrl}/mcp`, `localhost:${new URL(stack.baseUrl).port}`)).status).toBe(200);
  });

  it('bound to all interfaces: only the public addresses\' hosts and origins; MCP_LOCAL_DEV_ORIGINS adds loopback origins', async () => {
    const publicUrl = 'https://mcp.cairn.example/';
    const open = await startMcpStack({ orm: db.orm, temporal, tools: TOOLS, env: { HOST: '0.0.0.0', MCP_PUBLIC_URL: publicUrl } });
    try {
      // The listener itself, not its public address (which a TLS proxy would serve).
      const url = `http://127.0.0.1:${(open.mcp.server.address() as AddressInfo).port}/`;
      expect((await postWithHost(url, 'mcp.cairn.example')).status).toBe(200);
      expect((await postWithHost(url, `127.0.0.1:${new URL(open.baseUrl).port}`)).status).toBe(200); // PUBLIC_BASE_URL's host
      expect((await postWithHost(url, 'localhost')).status).toBe(403);
      expect((await postWithHost(url, 'mcp.cairn.example', 'https://mcp.cairn.example')).status).toBe(200);
      expect((await postWithHost(url, 'mcp.cairn.example', 'http://localhost:5173')).status).toBe(403);
    } finally {
      await open.close();
    }
    const dev = await startMcpStack({ orm: db.orm, temporal, tools: TOOLS, env: { HOST: '0.0.0.0', MCP_LOCAL_DEV_ORIGINS: 'true' } });
    try {
      expect((await post(msg('ping'), { url: dev.mcpUrl, origin: 'http://localhost:5173' })).status).toBe(200);
      expect((await post(msg('ping'), { url: dev.mcpUrl, origin: 'http://[::1]:6274' })).status).toBe(200);
      expect((await post(msg('ping'), { url: dev.mcpUrl, origin: 'https://evil.example' })).status).toBe(403);
      // CORS for browser-based clients: the preflight and the response name the admitted origin only.
      const preflight = await fetch(dev.mcpUrl, { method: 'OPTIONS', headers: { origin: 'http://localhost:5173', 'access-control-request-method': 'POST' } });
      expect(preflight.status).toBe(204);
      expect(preflight.headers.get('access-control-allow-origin')).toBe('http://localhost:5173');
      expect(preflight.headers.get('access-control-allow-headers')).toContain('mcp-protocol-version');
      const evil = await fetch(dev.mcpUrl, { method: 'OPTIONS', headers: { origin: 'https://evil.example' } });
      expect(evil.status).toBe(403);
      expect(evil.headers.get('access-control-allow-origin')).toBeNull();
      const res = await post(msg('ping'), { url: dev.mcpUrl, origin: 'http://localhost:5173' });
      expect(res.headers.get('access-control-expose-headers')).toContain('www-authenticate');
    } finally {
      await dev.close();
    }
  });
});

describe('secrets', () => {
  it('no MCP response of this file contains an API key or CLI token', () => {
    expect(transcript.length).toBeGreaterThan(20);
    for (const text of transcript) {
      for (const secret of [full.secret, ingestOnly.secret, revoked.secret, cliToken]) expect(text.includes(secret)).toBe(false);
    }
  });
});
