import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { ApiClient, createTestAccount, eventually, type Json } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Query over native memory written through the memory routes (no SQL shortcuts): messages and the claim
// derived from them become evidence once their event succeeded; a corrected claim outranks what it
// replaced; peer selectors narrow, deleted peers vanish, audiences separate keys of one account, and
// another account sees nothing.

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let client: ApiClient;

const ALL = ['query', 'query.answer', 'memory.read', 'memory.write'] as const;
let key: string;
let teamA: string;
let teamB: string;
let other: string;

async function keyFor(accountId: string, audiences: string[] | null) {
  const { secret } = await createApiKey(db.orm.em.fork(), accountId, { name: 'k', scopes: [...ALL], maxPreset: 'accuracy', audiences });
  return secret;
}

const mem = (bearer: string, method: 'POST' | 'GET' | 'PUT' | 'DELETE', path: string, body?: unknown) =>
  client.call(method, `/v1/workspaces/default${path}`, { as: { bearer }, ...(body === undefined ? {} : { body }) });

async function waitEvent(bearer: string, eventId: string) {
  return eventually(async () => {
    const r = await mem(bearer, 'GET', `/events/${eventId}`);
    return ['succeeded', 'failed', 'quarantined'].includes(r.body?.status) ? r.body : null;
  }, `event ${eventId}`, 60_000);
}

async function say(bearer: string, peer: string, session: string, content: string) {
  expect((await mem(bearer, 'POST', '/peers', { id: peer })).status).toBe(200);
  expect((await mem(bearer, 'POST', '/sessions', { id: session })).status).toBe(200);
  const r = await mem(bearer, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content }] });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  expect((await waitEvent(bearer, r.body.event_id)).status).toBe('succeeded');
}

const query = async (bearer: string, body: Json) => {
  const r = await client.post('/v1/query', { as: { bearer }, body: { idempotencyKey: `q-${randomUUID()}`, mode: 'evidence', ...body } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.evidence as { text: string; kind: string; origin: Json; supports?: Json[] }[];
};

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  client = new ApiClient(api.baseUrl);
  const a = await createTestAccount(db.orm, { monthlyCredits: 1000, queryDailyLimit: 1000 });
  key = await keyFor(a.id, null);
  teamA = await keyFor(a.id, ['team-a']);
  teamB = await keyFor(a.id, ['team-b']);
  other = await keyFor((await createTestAccount(db.orm, { monthlyCredits: 1000 })).id, null);
  await say(key, 'dana', 'trip', 'I moved to Lisbon in 2019 and I work as a marine biologist.');
  await say(key, 'omar', 'chat', 'I live in Cairo and I collect antique compasses.');
  await say(teamA, 'ana', 'hive', 'I keep bees in Ghent, forty hives since 2015.');
}, 180_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

describe('query over native memory', () => {
  it('returns the claim derived from the message as one piece of evidence, citing the message, attributed to the peer', async () => {
    const ev = await query(key, { query: 'Where did Dana move to?', peer_ids: ['dana'] });
    const lisbon = ev.filter((e) => /Lisbon/.test(e.text));
    expect(lisbon.map((e) => e.kind)).toEqual(['claim']);
    const support = lisbon[0]!.supports![0]!;
    expect(support).toMatchObject({ kind: 'message', text: 'I moved to Lisbon in 2019 and I work as a marine biologist.', origin: { type: 'message', peer: 'dana', session: 'trip' } });
    expect(support.text.slice(support.span.start, support.span.end)).toBe(support.quote);
    expect(support.quote).toContain('Lisbon');
    for (const e of ev) expect(e.origin.peer).toBe('dana');
    // The supporting message's handle is a citation of its own.
    const cited = await query(key, { citationHandle: support.citationHandle });
    expect(cited.map((e) => [e.kind, e.text])).toEqual([['message', support.text]]);
  });

  it('ranks a corrected claim above what it replaced, and the replaced text is no longer a claim', async () => {
    const list = await mem(key, 'POST', '/claims/list', { peer_id: 'dana' });
    const claim = list.body.items.find((c: Json) => /Lisbon/.test(c.content));
    expect(claim, JSON.stringify(list.body)).toBeDefined();
    const put = await mem(key, 'PUT', `/claims/${claim.id}`, { content: 'Dana moved to Porto in 2021.', head_revision: claim.head_revision, reason: 'moved again' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const ev = await query(key, { query: 'Where did Dana move to?', peer_ids: ['dana'] });
    const porto = ev.findIndex((e) => e.kind === 'claim' && /Porto/.test(e.text));
    expect(porto).toBeGreaterThanOrEqual(0);
    expect(ev.some((e) => e.kind === 'claim' && /Lisbon/.test(e.text))).toBe(false);
    const lisbonMessage = ev.findIndex((e) => e.kind === 'message' && /Lisbon/.test(e.text));
    if (lisbonMessage >= 0) expect(porto).toBeLessThan(lisbonMessage);
  });

  it('never returns an unselected peer, and a deleted peer from nowhere', async () => {
    expect(JSON.stringify(await query(key, { query: 'Cairo compasses', peer_ids: ['dana'] }))).not.toContain('Cairo');
    expect(JSON.stringify(await query(key, { query: 'Cairo compasses' }))).toContain('Cairo');
    const del = await mem(key, 'DELETE', '/peers/omar');
    expect((await waitEvent(key, del.body.event_id)).status).toBe('succeeded');
    expect(JSON.stringify(await query(key, { query: 'Cairo compasses' }))).not.toContain('Cairo');
    expect((await client.post('/v1/query', { as: { bearer: key }, body: { idempotencyKey: `q-${randomUUID()}`, mode: 'evidence', query: 'Cairo', peer_ids: ['omar'] } })).status).toBe(403);
  });

  it('keeps what a key limited to one audience wrote from keys limited to another', async () => {
    expect(JSON.stringify(await query(teamA, { query: 'bees Ghent hives' }))).toContain('Ghent');
    expect(JSON.stringify(await query(teamB, { query: 'bees Ghent hives' }))).not.toContain('Ghent');
    const ev = await query(teamA, { query: 'bees Ghent hives' });
    for (const e of ev) expect(e.origin.audience).toBe('team-a');
  });

  it('gives another account nothing', async () => {
    for (const q of ['Lisbon marine biologist', 'Porto', 'bees Ghent']) {
      expect(await query(other, { query: q })).toEqual([]);
    }
    expect((await client.post('/v1/query', { as: { bearer: other }, body: { idempotencyKey: `q-${randomUUID()}`, mode: 'evidence', query: 'Lisbon', peer_ids: ['dana'] } })).status).toBe(403);
  });
});

describe('conflicts memory knows, in every query mode', () => {
  const run = async (body: Json) => {
    const r = await client.post('/v1/query', { as: { bearer: key }, body: { idempotencyKey: `q-${randomUUID()}`, ...body } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  let porto: Json;
  let madrid: Json;
  beforeAll(async () => {
    // Two homes without a word of change: a conflict ("I live in Madrid now" would supersede Porto).
    await say(key, 'alice', 'moves', 'I live in Porto.');
    await say(key, 'alice', 'moves', 'I live in Madrid.');
    const claims = (await mem(key, 'POST', '/claims/list', { peer_id: 'alice' })).body.items as Json[];
    porto = claims.find((c) => /Porto/.test(c.content));
    madrid = claims.find((c) => /Madrid/.test(c.content));
    expect(madrid.conflicts_with).toEqual([porto.id]);
  }, 120_000);

  const both = (conflicts: Json[]) => conflicts.find((c) => c.statements.includes(porto.content) && c.statements.includes(madrid.content));

  it('reports the recorded conflict in evidence, context and answer mode; answer mode flags both sides', async () => {
    for (const mode of ['evidence', 'context', 'answer']) {
      const r = await run({ mode, query: 'Where does alice live?', peer_ids: ['alice'] });
      const c = both(r.conflicts);
      expect(c, `${mode}: ${JSON.stringify(r.conflicts)}`).toMatchObject({ topic: 'peer alice: home', citationHandles: [expect.stringMatching(/^cit_/), expect.stringMatching(/^cit_/)] });
      expect(r.limitations.map((l: Json) => l.code)).toContain('conflicting_evidence');
      // Each handle resolves to its claim inside the same boundary.
      for (const [i, handle] of c.citationHandles.entries()) {
        const looked = await run({ mode: 'evidence', citationHandle: handle, peer_ids: ['alice'] });
        expect(looked.evidence.map((e: Json) => e.text)).toEqual([c.statements[i]]);
      }
      if (mode === 'context') expect(r.context.text).toContain('[note, generated, not citable]');
      if (mode === 'answer') {
        // The answerer answers with the part of a side that answers (a place for "where"); the note
        // cites both sides.
        const stated = r.answer.sentences.filter((s: Json) => !s.note).map((s: Json) => s.text as string);
        expect(stated.length).toBeGreaterThan(0);
        for (const text of stated) expect([porto.content, madrid.content].some((side: string) => side.includes(text.replace(/\.$/, '')))).toBe(true);
        const note = r.answer.sentences.find((s: Json) => s.note === 'conflict');
        expect(note, JSON.stringify(r.answer)).toBeDefined();
        expect([...note.citations].sort()).toEqual([...c.citationHandles].sort());
        expect(r.answer.text).toMatch(/conflicting statements.*ask which is right/);
      }
    }
  });

  it('reports it for an exact citation lookup of one side (the other side\'s handle comes with it)', async () => {
    const listed = await run({ mode: 'evidence', query: 'alice Madrid', peer_ids: ['alice'] });
    const handle = listed.evidence.find((e: Json) => e.kind === 'claim' && e.text === madrid.content).citationHandle;
    const r = await run({ mode: 'evidence', citationHandle: handle });
    expect(r.evidence).toHaveLength(1);
    expect(both(r.conflicts)?.citationHandles).toContain(handle);
  });

  it('a correction settles it: no conflict is reported afterwards', async () => {
    const put = await mem(key, 'PUT', `/claims/${madrid.id}`, { content: 'alice lives in central Madrid.', head_revision: madrid.head_revision, reason: 'confirmed with alice' });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    for (const mode of ['evidence', 'answer']) {
      const r = await run({ mode, query: 'Where does alice live?', peer_ids: ['alice'] });
      expect(r.conflicts.filter((c: Json) => c.topic === 'peer alice: home'), JSON.stringify(r.conflicts)).toEqual([]);
    }
  });
});
