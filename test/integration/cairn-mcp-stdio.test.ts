import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineTool, type McpTool } from '../../api/mcp/tools/registry.ts';
import { ApiClient, createKey, createTestAccount, signIn, type CreatedKey } from '../helpers/accounts.ts';
import { CAIRN, cairnHome, runCairn } from '../helpers/cairn.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { testTemporalClient } from '../helpers/services.ts';

// `cairn mcp` (stdio) driven by the MCP SDK's StdioClientTransport: a real child process talking to
// the real API over HTTP. Its tools are the hosted endpoint's tools, forwarded, so they are compared
// with what the hosted endpoint lists.

const echo = defineTool({
  name: 'echo_word',
  title: 'Echo',
  description: 'Echoes a word (test tool).',
  input: z.strictObject({ word: z.string().min(1) }),
  output: z.object({ word: z.string(), account: z.string() }),
  scopes: ['memory.read'],
  annotations: { readOnlyHint: true },
  run: async (ctx, input) => ({ data: { word: input.word, account: ctx.principal.email } }),
});
const write = defineTool({
  name: 'write_probe',
  title: 'Write probe',
  description: 'Needs memory.write (test tool).',
  input: z.strictObject({}),
  output: z.object({ wrote: z.boolean() }),
  scopes: ['memory.write'],
  annotations: { readOnlyHint: false },
  run: async () => ({ data: { wrote: true } }),
});

let db: TestDatabase;
let stack: McpStack;
let key: CreatedKey;
let email: string;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal, tools: [echo, write] as unknown as McpTool[] });
  const api = new ApiClient(stack.baseUrl);
  const account = await createTestAccount(db.orm);
  email = account.email;
  key = await createKey(api, { cookie: await signIn(api, account) }, { scopes: ['memory.read'] });
});
afterAll(async () => {
  await stack?.close();
  await temporal.close();
  await db?.drop();
});

const stdioClient = async (env: Record<string, string>) => {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [CAIRN, 'mcp'],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  await client.connect(transport);
  return client;
};

/** Runs `cairn ...` to completion (for the failure cases), in an empty config directory. */
const run = async (args: string[], env: Record<string, string>) => {
  const home = await cairnHome();
  try {
    return await runCairn(args, { ...home.env, ...env });
  } finally {
    await home.remove();
  }
};

describe('cairn mcp (stdio)', () => {
  it('serves the hosted endpoint\'s tools, with the same schemas and descriptions, and calls them with the key', async () => {
    const client = await stdioClient({ CAIRN_API_KEY: key.secret, CAIRN_BASE_URL: stack.baseUrl });
    expect(client.getServerVersion()?.name).toBe('cairn');
    expect(client.getInstructions()).toContain('poll get_event_status');
    const hosted = new Client({ name: 'hosted', version: '1' });
    await hosted.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${key.secret}` } } }));
    expect((await client.listTools()).tools).toEqual((await hosted.listTools()).tools);
    expect(client.getServerCapabilities()).toEqual(hosted.getServerCapabilities());
    expect((await client.listPrompts()).prompts).toEqual((await hosted.listPrompts()).prompts);
    await client.setLoggingLevel('info');

    const ok = await client.callTool({ name: 'echo_word', arguments: { word: 'over-stdio' } });
    expect(ok.structuredContent).toEqual({ word: 'over-stdio', account: email });
    const refused = await client.callTool({ name: 'write_probe', arguments: {} });
    expect(refused.isError).toBe(true);
    expect(refused.structuredContent).toEqual({ error: { code: 'forbidden', message: expect.stringContaining('memory.write') } });
    await client.close();
    await hosted.close();
  });

  it('a missing or malformed CAIRN_API_KEY is a usage error (exit 64) before anything is served', async () => {
    const missing = await run(['mcp'], { CAIRN_BASE_URL: stack.baseUrl });
    expect(missing.code).toBe(64);
    expect(missing.stderr).toContain('usage_error: no API key');
    expect(missing.stderr).toContain('CAIRN_API_KEY');
    expect(missing.stdout).toBe('');
    expect((await run(['mcp'], { CAIRN_API_KEY: 'sk-something', CAIRN_BASE_URL: stack.baseUrl })).code).toBe(64);
  });

  it('a revoked or unknown key fails at start with the endpoint named, and prints nothing on stdout', async () => {
    const res = await run(['mcp'], { CAIRN_API_KEY: `cairn_sk_${'x'.repeat(43)}`, CAIRN_BASE_URL: stack.baseUrl });
    expect(res.code).toBe(1);
    expect(res.stderr).toContain(`${stack.baseUrl}/mcp`);
    expect(res.stderr).not.toContain('cairn_sk_');
    expect(res.stdout).toBe('');
  });

  it('cairn help lists the commands; an unknown command is exit 64', async () => {
    const help = await run(['help'], {});
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('cairn mcp');
    expect((await run(['nope'], {})).code).toBe(64);
  });
});
