import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../core/auth/api-keys.ts';
import type { Scope } from '../../../core/contracts/account.ts';
import { createTestAccount, type Json } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { connectMcp, seedDanaTrip, startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { memoryRows } from '../../helpers/memory-rows.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// Native memory as MCP resources (templates, list, read), the "what do you know about" prompt and
// argument completion, through the MCP SDK's own client: scopes and account isolation as for tools.

let db: TestDatabase;
let stack: McpStack;
const temporal = testTemporalClient();
const keys: Record<string, string> = {};
let claimId: string;
const clients: Client[] = [];

async function key(accountId: string, scopes: Scope[]) {
  return (await createApiKey(db.orm.em.fork(), accountId, { name: 'k', scopes, maxPreset: 'accuracy' })).secret;
}
const connect = async (bearer: string) => {
  const c = await connectMcp(stack.mcpUrl, bearer, 'resources-test');
  clients.push(c);
  return c;
};

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal });
  const a = await createTestAccount(db.orm);
  const b = await createTestAccount(db.orm);
  ({ claimId } = await seedDanaTrip(db.orm, a.id));
  const mem = memoryRows(db.orm);
  await mem.peer(a.id, 'daniel');
  await mem.peer(a.id, 'erik');
  await mem.peer(b.id, 'dagny');
  keys.read = await key(a.id, ['memory.read']);
  keys.ingest = await key(a.id, ['ingest']);
  keys.other = await key(b.id, ['memory.read', 'memory.write']);
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await stack?.close();
  await temporal.close();
  await db?.drop();
});

describe('MCP resources, prompts and completion over native memory', () => {
  it('declares the capabilities; lists templates and resources; reads a peer, a session and a claim by stable URI', async () => {
    const c = await connect(keys.read!);
    expect(c.getServerCapabilities()).toMatchObject({ resources: {}, prompts: {}, completions: {} });
    const { resourceTemplates } = await c.listResourceTemplates();
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual([
      'cairn://workspaces/default/peers/{peer}', 'cairn://workspaces/default/sessions/{session}', 'cairn://workspaces/default/claims/{claim}',
    ]);
    const { resources } = await c.listResources();
    expect(resources.map((r) => r.uri)).toEqual([
      'cairn://workspaces/default/peers/dana', 'cairn://workspaces/default/peers/daniel', 'cairn://workspaces/default/peers/erik',
      'cairn://workspaces/default/sessions/trip',
    ]);
    const peer = await c.readResource({ uri: 'cairn://workspaces/default/peers/dana' });
    const rep = JSON.parse((peer.contents[0] as { text: string }).text) as Json;
    expect(rep).toMatchObject({ peer_id: 'dana', claims: [{ id: claimId, content: 'Dana travels to Skarholm by ferry.' }] });
    const session = await c.readResource({ uri: 'cairn://workspaces/default/sessions/trip' });
    expect((session.contents[0] as { text: string }).text).toContain('ninth of June');
    const claim = await c.readResource({ uri: `cairn://workspaces/default/claims/${claimId}` });
    expect(JSON.parse((claim.contents[0] as { text: string }).text)).toMatchObject({ id: claimId });
    await expect(c.readResource({ uri: 'cairn://workspaces/default/peers/nobody' })).rejects.toMatchObject({ code: -32002 });
    await expect(c.readResource({ uri: 'https://example.com/x' })).rejects.toMatchObject({ code: -32002 });
  });

  it('the prompt carries the peer memory; completion offers labels by prefix for templates and the prompt', async () => {
    const c = await connect(keys.read!);
    expect((await c.listPrompts()).prompts.map((p) => p.name)).toEqual(['what_do_you_know_about']);
    const prompt = await c.getPrompt({ name: 'what_do_you_know_about', arguments: { peer: 'dana' } });
    expect(JSON.stringify(prompt.messages)).toContain('Dana travels to Skarholm by ferry.');
    const peers = await c.complete({ ref: { type: 'ref/resource', uri: 'cairn://workspaces/default/peers/{peer}' }, argument: { name: 'peer', value: 'da' } });
    expect(peers.completion.values).toEqual(['dana', 'daniel']);
    const sessions = await c.complete({ ref: { type: 'ref/resource', uri: 'cairn://workspaces/default/sessions/{session}' }, argument: { name: 'session', value: '' } });
    expect(sessions.completion.values).toEqual(['trip']);
    const forPrompt = await c.complete({ ref: { type: 'ref/prompt', name: 'what_do_you_know_about' }, argument: { name: 'peer', value: 'e' } });
    expect(forPrompt.completion.values).toEqual(['erik']);
  });

  it('another account reads, lists and completes none of it; a credential without memory.read is offered nothing', async () => {
    const other = await connect(keys.other!);
    expect((await other.listResources()).resources.map((r) => r.uri)).toEqual(['cairn://workspaces/default/peers/dagny']);
    await expect(other.readResource({ uri: 'cairn://workspaces/default/peers/dana' })).rejects.toMatchObject({ code: -32002 });
    await expect(other.readResource({ uri: `cairn://workspaces/default/claims/${claimId}` })).rejects.toMatchObject({ code: -32002 });
    await expect(other.getPrompt({ name: 'what_do_you_know_about', arguments: { peer: 'dana' } })).rejects.toMatchObject({ code: -32002 });
    const completed = await other.complete({ ref: { type: 'ref/prompt', name: 'what_do_you_know_about' }, argument: { name: 'peer', value: 'da' } });
    expect(completed.completion.values).toEqual(['dagny']);

    const ingest = await connect(keys.ingest!);
    expect((await ingest.listResources()).resources).toEqual([]);
    expect((await ingest.listResourceTemplates()).resourceTemplates).toEqual([]);
    expect((await ingest.listPrompts()).prompts).toEqual([]);
    const refused = ingest.readResource({ uri: 'cairn://workspaces/default/peers/dana' });
    await expect(refused).rejects.toMatchObject({ data: { code: 'forbidden' } });
    await expect(refused).rejects.not.toThrow(/Skarholm/);
  });
});
