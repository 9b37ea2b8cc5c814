import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MEMORY_TOOLS } from '../../../api/mcp/tools/memory.ts';
import type { Json } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../../helpers/services.ts';
import { accountWithKeys, memoryClient, tag } from './helpers.ts';

// The 13 native-memory MCP tools through the MCP SDK's own client over Streamable HTTP, against real
// PostgreSQL and a real Temporal worker; results are checked against the REST API (same domain functions).

let db: TestDatabase;
let stack: McpStack;
let worker: Awaited<ReturnType<typeof startWorker>>;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let keys: Record<string, string>;
let otherKey: string;
const clients: Client[] = [];

async function connect(bearer: string): Promise<Client> {
  const client = new Client({ name: 'memory-tools-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${bearer}` } } }));
  clients.push(client);
  return client;
}

async function call(client: Client, name: string, args: Json = {}): Promise<{ isError: boolean; data: Json; text: string }> {
  const r = await client.callTool({ name, arguments: args });
  return { isError: Boolean(r.isError), data: r.structuredContent as Json, text: (r.content as { text: string }[])[0]!.text };
}

async function pollEvent(client: Client, eventId: string): Promise<Json> {
  for (let i = 0; i < 200; i++) {
    const r = await call(client, 'get_event_status', { event_id: eventId });
    expect(r.isError, r.text).toBe(false);
    if (!['queued', 'running'].includes(r.data.status)) return r.data;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  throw new Error('event did not finish');
}

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  ({ keys } = await accountWithKeys(db.orm, { full: ['memory.read', 'memory.write'], read: ['memory.read'], ingest: ['ingest'] }));
  otherKey = (await accountWithKeys(db.orm, { full: ['memory.read', 'memory.write'] })).keys.full!;
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await worker?.stop();
  await stack?.close();
  await temporal.close();
  await db?.drop();
});

describe('native memory MCP tools', () => {
  it('lists the 13 memory tools with described input schemas', async () => {
    const client = await connect(keys.full!);
    const { tools } = await client.listTools();
    const names = MEMORY_TOOLS.map((t) => t.name);
    expect(names.sort()).toEqual([
      'add_messages_to_session', 'create_peer', 'create_session', 'delete_claim', 'delete_peer', 'delete_session', 'get_claim',
      'get_claim_history', 'get_event_status', 'get_peer_representation', 'get_queue_status', 'list_claims', 'update_claim',
    ]);
    for (const n of names) {
      const t = tools.find((x) => x.name === n);
      expect(t, n).toBeDefined();
      expect(t!.description!.length).toBeGreaterThan(40);
      for (const [prop, schema] of Object.entries((t!.inputSchema.properties ?? {}) as Record<string, Json>)) {
        if (['peer_id', 'session_id', 'claim_id', 'event_id'].includes(prop)) expect(schema.description, `${n}.${prop}`).toBeTruthy();
      }
    }
    const write = tools.find((t) => t.name === 'add_messages_to_session')!;
    expect(write.inputSchema.required).toEqual(expect.arrayContaining(['session_id', 'peer_id', 'messages']));
  });

  it('the whole flow: create, add messages, poll, read, correct, history, withdraw, delete', async () => {
    const client = await connect(keys.full!);
    const rest = memoryClient(stack.baseUrl);
    const peer = tag('mcp');
    const session = tag('mcps');
    expect((await call(client, 'create_peer', { peer_id: peer })).data).toMatchObject({ id: peer, workspace: 'default' });
    expect((await call(client, 'create_session', { session_id: session })).data).toMatchObject({ id: session });
    expect((await rest.mem(keys.full!, 'GET', `/peers/${peer}`)).status).toBe(200);

    const add = await call(client, 'add_messages_to_session', {
      session_id: session, peer_id: peer, messages: [{ role: 'user', content: 'My favourite constellation is Orion.' }], idempotency_key: tag('idem'),
    });
    expect(add.isError, add.text).toBe(false);
    expect(add.data).toMatchObject({ event_id: expect.any(String), status: 'processing' });
    expect(add.text).toContain('get_event_status');
    const ev = await pollEvent(client, add.data.event_id);
    expect(ev.status).toBe('succeeded');

    const listed = await call(client, 'list_claims', { peer_id: peer, session_id: session });
    expect(listed.data.items).toHaveLength(1);
    const claim = listed.data.items[0];
    expect(claim.content).toBe(`${peer}'s favourite constellation is Orion.`);
    expect((await call(client, 'get_claim', { claim_id: claim.id })).data).toEqual(
      (({ schemaVersion: _s, ...rest }) => rest)((await rest.mem(keys.full!, 'GET', `/claims/${claim.id}`)).body),
    );
    const rep = await call(client, 'get_peer_representation', { peer_id: peer });
    expect(rep.data.claims.map((c: Json) => c.id)).toEqual([claim.id]);
    expect(rep.text).toContain('not instructions');

    const upd = await call(client, 'update_claim', { claim_id: claim.id, content: `${peer}'s favourite constellation is Cassiopeia.`, head_revision: claim.head_revision, reason: 'corrected' });
    expect(upd.data.claim).toMatchObject({ authority: 'correction_memory', state: 'current' });
    const stale = await call(client, 'update_claim', { claim_id: claim.id, content: 'x', head_revision: claim.head_revision, reason: 'stale' });
    expect(stale.isError).toBe(true);
    expect(stale.data.error.code).toBe('revision_conflict');
    const del = await call(client, 'delete_claim', { claim_id: claim.id, head_revision: upd.data.claim.head_revision, reason: 'withdrawn' });
    expect(del.data).toMatchObject({ state: 'withdrawn' });
    const history = await call(client, 'get_claim_history', { claim_id: claim.id });
    expect(history.data.entries.map((e: Json) => e.event)).toEqual(['ADD', 'UPDATE', 'DELETE']);

    const queue = await call(client, 'get_queue_status');
    expect(queue.data.counts.succeeded).toBeGreaterThanOrEqual(1);

    const delSession = await call(client, 'delete_session', { session_id: session });
    expect(delSession.text).toContain('get_event_status');
    expect((await pollEvent(client, delSession.data.event_id)).status).toBe('succeeded');
    const delPeer = await call(client, 'delete_peer', { peer_id: peer });
    expect((await pollEvent(client, delPeer.data.event_id)).status).toBe('succeeded');
    expect((await rest.mem(keys.full!, 'GET', `/peers/${peer}`)).status).toBe(404);
  });

  it('a missing scope is a tool error and never data; nothing is created', async () => {
    const full = await connect(keys.full!);
    const peer = tag('scoped');
    await call(full, 'create_peer', { peer_id: peer });
    const readOnly = await connect(keys.read!);
    const refused = await call(readOnly, 'create_peer', { peer_id: tag('denied') });
    expect(refused.isError).toBe(true);
    expect(refused.data.error.code).toBe('forbidden');
    const ingestOnly = await connect(keys.ingest!);
    const noRead = await call(ingestOnly, 'get_peer_representation', { peer_id: peer });
    expect(noRead.isError).toBe(true);
    expect(noRead.text).not.toContain(peer);
    expect((await memoryClient(stack.baseUrl).mem(keys.full!, 'POST', '/peers/list', { limit: 100 })).text).not.toContain('denied');
  });

  it('another account\'s tool calls return no data', async () => {
    const full = await connect(keys.full!);
    const peer = tag('mine');
    const session = tag('mines');
    await call(full, 'create_peer', { peer_id: peer });
    await call(full, 'create_session', { session_id: session });
    const add = await call(full, 'add_messages_to_session', { session_id: session, peer_id: peer, messages: [{ role: 'user', content: 'My favourite secret is Zanzibar.' }] });
    const ev = await pollEvent(full, add.data.event_id);
    const other = await connect(otherKey);
    for (const [name, args] of [
      ['get_claim', { claim_id: ev.outcome.claim_id }],
      ['get_claim_history', { claim_id: ev.outcome.claim_id }],
      ['get_event_status', { event_id: add.data.event_id }],
      ['get_peer_representation', { peer_id: peer }],
      ['delete_peer', { peer_id: peer }],
    ] as const) {
      const r = await call(other, name, args);
      expect(r.isError, name).toBe(true);
      expect(r.data.error.code).toBe('not_found');
      expect(r.text).not.toContain('Zanzibar');
    }
    const list = await call(other, 'list_claims', {});
    expect(list.data.items).toEqual([]);
    expect((await call(full, 'get_claim', { claim_id: ev.outcome.claim_id })).data.content).toContain('Zanzibar');
  });
});
