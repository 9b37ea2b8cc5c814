import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../core/auth/api-keys.ts';
import type { Scope } from '../../../core/contracts/account.ts';
import { createTestAccount } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { connectMcp, seedDanaTrip, startMcpStack, type McpStack } from '../../helpers/mcp.ts';
import { memoryRows } from '../../helpers/memory-rows.ts';
import { testTemporalClient } from '../../helpers/services.ts';

// The "what do you know about" prompt and its argument completion, through the MCP SDK's own client:
// scopes and account isolation as for tools; no resources (spec 4.6 rule 3).

let db: TestDatabase;
let stack: McpStack;
const temporal = testTemporalClient();
const keys: Record<string, string> = {};
const clients: Client[] = [];

async function key(accountId: string, scopes: Scope[]) {
  return (await createApiKey(db.orm.em.fork(), accountId, { name: 'k', scopes, maxPreset: 'accuracy' })).secret;
}
const connect = async (bearer: string) => {
  const c = await connectMcp(stack.mcpUrl, bearer, 'prompts-test');
  clients.push(c);
  return c;
};

beforeAll(async () => {
  db = await createTestDatabase();
  stack = await startMcpStack({ orm: db.orm, temporal });
  const a = await createTestAccount(db.orm);
  const b = await createTestAccount(db.orm);
  await seedDanaTrip(db.orm, a.id);
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

describe('MCP prompts and completion over native memory', () => {
  it('declares prompts and completion but no resources (spec 4.6 rule 3): resources/list is method not found', async () => {
    const c = await connect(keys.read!);
    expect(c.getServerCapabilities()).toMatchObject({ prompts: {}, completions: {} });
    expect(c.getServerCapabilities()?.resources).toBeUndefined();
    await expect(c.listResources()).rejects.toMatchObject({ code: -32601 });
  });

  it('the prompt carries the peer memory; completion offers peer labels by prefix for its argument', async () => {
    const c = await connect(keys.read!);
    expect((await c.listPrompts()).prompts.map((p) => p.name)).toEqual(['what_do_you_know_about']);
    const prompt = await c.getPrompt({ name: 'what_do_you_know_about', arguments: { peer: 'dana' } });
    expect(JSON.stringify(prompt.messages)).toContain('Dana travels to Skarholm by ferry.');
    const forPrompt = await c.complete({ ref: { type: 'ref/prompt', name: 'what_do_you_know_about' }, argument: { name: 'peer', value: 'da' } });
    expect(forPrompt.completion.values).toEqual(['dana', 'daniel']);
    const e = await c.complete({ ref: { type: 'ref/prompt', name: 'what_do_you_know_about' }, argument: { name: 'peer', value: 'e' } });
    expect(e.completion.values).toEqual(['erik']);
  });

  it('another account gets and completes none of it; a credential without memory.read is offered nothing', async () => {
    const other = await connect(keys.other!);
    await expect(other.getPrompt({ name: 'what_do_you_know_about', arguments: { peer: 'dana' } })).rejects.toMatchObject({ code: -32002 });
    const completed = await other.complete({ ref: { type: 'ref/prompt', name: 'what_do_you_know_about' }, argument: { name: 'peer', value: 'da' } });
    expect(completed.completion.values).toEqual(['dagny']);

    const ingest = await connect(keys.ingest!);
    expect((await ingest.listPrompts()).prompts).toEqual([]);
    const refused = ingest.getPrompt({ name: 'what_do_you_know_about', arguments: { peer: 'dana' } });
    await expect(refused).rejects.toMatchObject({ data: { code: 'forbidden' } });
    await expect(refused).rejects.not.toThrow(/Skarholm/);
  });
});
