import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../core/auth/api-keys.ts';
import type { Scope } from '../../../core/contracts/account.ts';
import { createTestAccount, type Json } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { connectMcp, seedDanaTrip, startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// The query_context tool with the MCP SDK's own client over Streamable HTTP: the same query engine as
// POST /v1/query (memory rows written with SQL, as the memory routes land on another branch).

let db: TestDatabase;
let stack: McpStack;
const temporal = testTemporalClient();
const keys: Record<string, string> = {};

async function key(accountId: string, scopes: Scope[]) {
  return (await createApiKey(db.orm.em.fork(), accountId, { name: 'k', scopes, maxPreset: 'accuracy' })).secret;
}

const connect = (bearer: string) => connectMcp(stack.mcpUrl, bearer, 'query-test');

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal });
  const a = await createTestAccount(db.orm);
  const b = await createTestAccount(db.orm);
  await seedDanaTrip(db.orm, a.id);
  keys.full = await key(a.id, ['query', 'query.answer', 'memory.read']);
  keys.queryOnly = await key(a.id, ['query']);
  keys.readOnly = await key(a.id, ['memory.read']);
  keys.writeOnly = await key(a.id, ['memory.write']);
  keys.otherMemory = await key(b.id, ['memory.read']);
  keys.other = await key(b.id, ['query', 'query.answer']);
});
afterAll(async () => {
  await stack?.close();
  await temporal.close();
  await db?.drop();
});

describe('query_context', () => {
  it('is listed with its input schema and returns cited context as structured content and text', async () => {
    const c = await connect(keys.full!);
    const { tools } = await c.listTools();
    const tool = tools.find((t) => t.name === 'query_context');
    expect(tool?.inputSchema).toMatchObject({ type: 'object', properties: { query: { type: 'string' }, mode: { enum: ['evidence', 'context', 'answer'] } } });
    const r = await c.callTool({ name: 'query_context', arguments: { query: 'When does Dana take the ferry to Skarholm?' } });
    expect(r.isError).toBeFalsy();
    const data = r.structuredContent as Json;
    expect(data).toMatchObject({ schemaVersion: 'service-query-result-v1', mode: 'context', execution: 'ready' });
    expect(data.context.text).toContain('ninth of June');
    const handle = data.evidence.find((e: Json) => e.text.includes('ninth of June')).citationHandle;
    expect((r.content as { text: string }[])[0]!.text).toContain(handle);

    const exact = await c.callTool({ name: 'query_context', arguments: { mode: 'evidence', citationHandle: handle } });
    expect((exact.structuredContent as Json).evidence[0].text).toContain('ninth of June');
    const answer = await c.callTool({ name: 'query_context', arguments: { mode: 'answer', query: 'When is Dana\'s ferry to Skarholm booked?' } });
    expect((answer.structuredContent as Json).answer).toMatchObject({ disposition: 'partial' });
    await c.close();
  });

  it("the operation's requestId is the HTTP request's id (x-request-id when given), as on POST /v1/query", async () => {
    const c = new Client({ name: 'query-test', version: '1.0.0' });
    const requestId = `mcp-trace-${Date.now()}`;
    const headers = { authorization: `Bearer ${keys.full!}`, 'x-request-id': requestId };
    await c.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers } }));
    const r = await c.callTool({ name: 'query_context', arguments: { query: 'ferry Skarholm', mode: 'evidence' } });
    expect((r.structuredContent as Json).operation.requestId).toBe(requestId);
    await c.close();
  });

  it('an idempotencyKey makes a retry replay; the same key with another query is a tool error', async () => {
    const c = await connect(keys.full!);
    const args = { query: 'ferry Skarholm', mode: 'evidence', idempotencyKey: 'mcp-replay-key-1' };
    const first = (await c.callTool({ name: 'query_context', arguments: args })).structuredContent as Json;
    const again = (await c.callTool({ name: 'query_context', arguments: args })).structuredContent as Json;
    expect(again.evidence).toEqual(first.evidence);
    expect(again.operation.replayed).toBe(true);
    const conflict = await c.callTool({ name: 'query_context', arguments: { ...args, query: 'other' } });
    expect(conflict.structuredContent).toMatchObject({ error: { code: 'idempotency_conflict' } });
    await c.close();
  });

  it('an API key with memory.read and no query is refused query_context (spec 4.6) and not offered it; tools/list offers what the key can call', async () => {
    // An OAuth connection's memory-only search is proven with real OAuth clients (test/browser/mcp-oauth.test.ts).
    const memory = await connect(keys.readOnly!);
    const names = (await memory.listTools()).tools.map((t) => t.name);
    expect(names).not.toContain('query_context');
    expect(names).toContain('get_claim');
    expect(names).not.toContain('create_peer');
    expect(names).not.toContain('add_messages_to_session');
    const r = await memory.callTool({ name: 'query_context', arguments: { query: 'When does Dana take the ferry to Skarholm?' } });
    expect(r).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden' } } });
    expect(JSON.stringify(r)).not.toContain('ninth of June');
    // Sources and answers stay behind query.
    const sources = await memory.callTool({ name: 'query_context', arguments: { query: 'ferry', source_ids: ['00000000-0000-4000-8000-000000000000'] } });
    expect(sources).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden', message: expect.stringContaining('query') } } });
    const answer = await memory.callTool({ name: 'query_context', arguments: { mode: 'answer', query: 'ferry Skarholm' } });
    expect(answer).toMatchObject({ isError: true, structuredContent: { error: { code: 'query_answer_not_authorized' } } });

    const queryOnly = await connect(keys.queryOnly!);
    expect((await queryOnly.listTools()).tools.map((t) => t.name)).toEqual(['query_context']);
    const writer = await connect(keys.writeOnly!);
    const writeTools = (await writer.listTools()).tools.map((t) => t.name);
    expect(writeTools).not.toContain('query_context');
    expect(writeTools).toContain('add_messages_to_session');
    const refused = await writer.callTool({ name: 'query_context', arguments: { query: 'ferry Skarholm' } });
    expect(refused).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden' } } });
    expect(JSON.stringify(refused)).not.toContain('ninth');
    for (const c of [memory, queryOnly, writer]) await c.close();
  });

  it('a call asking for progress gets notifications/progress before its result; one that does not, a plain JSON answer', async () => {
    const c = await connect(keys.full!);
    const seen: { progress: number; total?: number; message?: string }[] = [];
    const r = await c.callTool({ name: 'query_context', arguments: { query: 'ferry Skarholm' } }, undefined, { onprogress: (p) => void seen.push(p) });
    expect(r.isError).toBeFalsy();
    expect(seen).toEqual([
      { progress: 0, total: 1, message: 'query_context started' },
      { progress: 1, total: 1, message: 'query_context done' },
    ]);
    const plain = await fetch(stack.mcpUrl, {
      method: 'POST',
      headers: { authorization: `Bearer ${keys.readOnly}`, accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'get_queue_status', arguments: {} } }),
    });
    expect(plain.headers.get('content-type')).toMatch(/^application\/json/);
    await plain.body?.cancel();
    await c.close();
  });

  it('missing scopes, invalid combinations and another account return no data', async () => {

    const q = await connect(keys.queryOnly!);
    const answer = await q.callTool({ name: 'query_context', arguments: { mode: 'answer', query: 'ferry Skarholm' } });
    expect(answer).toMatchObject({ isError: true, structuredContent: { error: { code: 'query_answer_not_authorized' } } });
    const invalid = await q.callTool({ name: 'query_context', arguments: { mode: 'context', query: 'x', citationHandle: `cit_${'a'.repeat(60)}` } });
    expect(invalid).toMatchObject({ isError: true, structuredContent: { error: { code: 'validation_error' } } });

    const other = await connect(keys.other!);
    const foreign = await other.callTool({ name: 'query_context', arguments: { query: 'When does Dana take the ferry to Skarholm?' } });
    expect(foreign.isError).toBeFalsy();
    expect(JSON.stringify(foreign)).not.toContain('ninth of June');
    const peer = await other.callTool({ name: 'query_context', arguments: { query: 'ferry', peer_ids: ['dana'] } });
    expect(peer).toMatchObject({ isError: true, structuredContent: { error: { code: 'forbidden' } } });
    const otherMemory = await connect(keys.otherMemory!);
    const foreignMemory = await otherMemory.callTool({ name: 'get_peer_representation', arguments: { peer_id: 'dana' } });
    expect(foreignMemory.isError).toBe(true);
    expect(JSON.stringify(foreignMemory)).not.toContain('ninth of June');
    for (const c of [q, other, otherMemory]) await c.close();
  });
});
