import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../../core/auth/api-keys.ts';
import { createTestAccount, type Json } from '../../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../../helpers/services.ts';
import { memoryClient, tag } from './helpers.ts';

// Native memory inside one account's audiences (docs/api.md, Audiences): labels carry the creating
// key's audience, what is written about a peer carries the peer's, and a key limited to audiences sees
// and changes only those. test/hostile/audience.test.ts sweeps every route; these are the rules.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let c: ReturnType<typeof memoryClient>;
const keys: Record<'whole' | 'x' | 'y' | 'xy', string> = { whole: '', x: '', y: '', xy: '' };

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  c = memoryClient(api.baseUrl);
  const account = await createTestAccount(db.orm);
  const key = async (audiences: string[] | null) =>
    (await createApiKey(db.orm.em.fork(), account.id, { name: 'k', scopes: ['memory.read', 'memory.write'], maxPreset: 'accuracy', audiences })).secret;
  keys.whole = await key(null);
  keys.x = await key(['team-x']);
  keys.y = await key(['team-y']);
  keys.xy = await key(['team-x', 'team-y']);
});
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

describe('audiences in native memory', () => {
  it("a label outside the key's audiences is not found, and cannot be created again (403)", async () => {
    const peer = tag('whole-peer');
    expect((await c.mem(keys.whole, 'POST', '/peers', { id: peer })).status).toBe(200);
    expect((await c.mem(keys.x, 'GET', `/peers/${peer}`)).status).toBe(404);
    const again = await c.mem(keys.x, 'POST', '/peers', { id: peer });
    expect(again.status).toBe(403);
    expect(again.body.error.code).toBe('forbidden');
    expect((await c.mem(keys.x, 'POST', '/peers/list', {})).body.items.map((p: Json) => p.id)).not.toContain(peer);
    expect((await c.mem(keys.whole, 'GET', `/peers/${peer}`)).status).toBe(200);
  });

  it("what an unlimited key writes about a team's peer stays in that team's audience", async () => {
    const peer = tag('x-peer');
    const session = tag('x-session');
    expect((await c.mem(keys.x, 'POST', '/peers', { id: peer })).status).toBe(200);
    expect((await c.mem(keys.x, 'POST', '/sessions', { id: session })).status).toBe(200);
    const r = await c.mem(keys.whole, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content: 'I live in Ghent and keep bees.' }] });
    expect(r.status, r.text).toBe(200);
    expect((await c.waitEvent(keys.x, r.body.event_id)).status).toBe('succeeded');
    const claims = (await c.mem(keys.x, 'POST', '/claims/list', { peer_id: peer })).body.items;
    expect(claims.length).toBe(1);
    expect((await c.mem(keys.y, 'GET', `/claims/${claims[0].id}`)).status).toBe(404);
    expect((await c.mem(keys.y, 'GET', `/events/${r.body.event_id}`)).status).toBe(404);
  });

  it("a session holding another audience's messages: each key lists its own, and only a key that reaches all may delete it", async () => {
    const session = tag('shared-session');
    const peerX = tag('px');
    const peerY = tag('py');
    expect((await c.mem(keys.x, 'POST', '/peers', { id: peerX })).status).toBe(200);
    expect((await c.mem(keys.y, 'POST', '/peers', { id: peerY })).status).toBe(200);
    // A key of both audiences creates the session (it carries team-x, the key's first) and writes for both peers.
    expect((await c.mem(keys.xy, 'POST', '/sessions', { id: session })).status).toBe(200);
    for (const [peer, content] of [[peerX, 'I work at the harbour office.'], [peerY, 'My favourite city is Porto.']]) {
      const r = await c.mem(keys.xy, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content }] });
      expect(r.status, r.text).toBe(200);
      await c.waitEvent(keys.xy, r.body.event_id);
    }
    const listed = (await c.mem(keys.x, 'POST', `/sessions/${session}/messages/list`, {})).body.items.map((m: Json) => m.peer_id);
    expect(listed).toEqual([peerX]);
    expect((await c.mem(keys.y, 'POST', `/sessions/${session}/messages/list`, {})).status).toBe(404); // the session is team-x's
    const refused = await c.mem(keys.x, 'DELETE', `/sessions/${session}`);
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('forbidden');
    expect((await c.mem(keys.xy, 'POST', `/sessions/${session}/messages/list`, {})).body.items.length).toBe(2);
    const deleted = await c.mem(keys.xy, 'DELETE', `/sessions/${session}`);
    expect(deleted.status).toBe(202);
  });

  it('a key limited to audiences cannot name another audience\'s ingest job as a message source', async () => {
    const peer = tag('src-peer');
    const session = tag('src-session');
    expect((await c.mem(keys.x, 'POST', '/peers', { id: peer })).status).toBe(200);
    expect((await c.mem(keys.x, 'POST', '/sessions', { id: session })).status).toBe(200);
    const [job] = await db.orm.em.fork().getConnection().execute<{ id: string }[]>(
      `insert into ingest_job (id, account_id, kind, status, attempts, audience) select gen_random_uuid(), account_id, 'file', 'succeeded', 1, 'team-y'
         from api_key limit 1 returning id`,
    );
    const r = await c.mem(keys.x, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content: 'See the file.' }], source_ids: [job!.id] });
    expect(r.status).toBe(400);
    expect(r.body.error.message).toContain('is not an ingest job of this account');
  });

  it("a key redacts only messages inside its audiences: another team's message in a shared session is not found", async () => {
    const px = tag('rx-peer');
    const py = tag('ry-peer');
    const session = tag('r-shared');
    expect((await c.mem(keys.x, 'POST', '/peers', { id: px })).status).toBe(200);
    expect((await c.mem(keys.y, 'POST', '/peers', { id: py })).status).toBe(200);
    expect((await c.mem(keys.xy, 'POST', '/sessions', { id: session })).status).toBe(200);
    const write = async (peer: string, content: string) => {
      const r = await c.mem(keys.xy, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content }] });
      expect(r.status, r.text).toBe(200);
      expect((await c.waitEvent(keys.xy, r.body.event_id)).status).toBe('succeeded');
      return r.body.results[0].message_id as string;
    };
    const mx = await write(px, 'I keep bees in Ghent.');
    const my = await write(py, 'I keep goats in Leuven.');
    const redact = (key: string, id: string) => c.mem(key, 'DELETE', `/sessions/${session}/messages/${id}`, { reason: 'audience test' });
    expect((await redact(keys.x, my)).status).toBe(404);
    const listed = (await c.mem(keys.xy, 'POST', `/sessions/${session}/messages/list`, {})).body.items as Json[];
    expect(listed.find((m) => m.id === my)).toMatchObject({ content: 'I keep goats in Leuven.', redacted: null });
    const own = await redact(keys.x, mx);
    expect(own.status, own.text).toBe(200);
    expect(own.body.redacted_by.credential).toBe('apiKey');
  });
});
