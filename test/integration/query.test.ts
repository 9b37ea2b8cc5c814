import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import type { Scope } from '../../core/contracts/account.ts';
import { ApiClient, createTestAccount, expectError, signIn, sqlClient, type Json, type Sql } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { memoryRows } from '../helpers/memory-rows.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// POST /v1/query end to end: documents ingested through the real API and worker, memory rows
// written with SQL, real metering and idempotency.

let db: TestDatabase;
let sql: Sql;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let client: ApiClient;
let mem: ReturnType<typeof memoryRows>;

const ALL: Scope[] = ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'];
const today = new Date().toISOString().slice(0, 10);
const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/gi;

type Acct = { id: string; email: string; password: string; key: string };

async function account(opts: { scopes?: Scope[]; maxPreset?: 'efficient' | 'accuracy'; audiences?: string[]; credits?: number; queryDailyLimit?: number } = {}): Promise<Acct> {
  const a = await createTestAccount(db.orm, {
    monthlyCredits: opts.credits ?? 1000, onboardingCredits: 0, queryDailyLimit: opts.queryDailyLimit ?? 1000, ingestDailyLimit: 1000,
  });
  const key = await keyFor(a.id, opts);
  return { ...a, key };
}

async function keyFor(accountId: string, opts: { scopes?: Scope[]; maxPreset?: 'efficient' | 'accuracy'; audiences?: string[] } = {}) {
  const { secret } = await createApiKey(db.orm.em.fork(), accountId, {
    name: 'k', scopes: opts.scopes ?? ALL, maxPreset: opts.maxPreset ?? 'accuracy', audiences: opts.audiences ?? null,
  });
  return secret;
}

const query = (bearer: string, body: Json) =>
  client.post('/v1/query', { as: { bearer }, body: { idempotencyKey: `q-${randomUUID()}`, ...body } });

async function ingestText(bearer: string, filename: string, text: string): Promise<string> {
  const r = await client.post('/v1/ingest/file', {
    as: { bearer },
    body: { filename, contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'), dryRun: false, datedAt: today, idempotencyKey: `i-${randomUUID()}` },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  for (let i = 0; i < 240; i++) {
    const j = await client.get(`/v1/ingest/jobs/${r.body.job.id}`, { as: { bearer } });
    if (j.body.job.status === 'succeeded') return r.body.job.id as string;
    if (j.body.job.status !== 'queued') throw new Error(`ingest ended ${j.body.job.status}`);
    await new Promise((res) => setTimeout(res, 250));
  }
  throw new Error('ingest did not finish');
}

const evidenceText = (body: Json) => JSON.stringify(body.evidence);

let A: Acct;
let B: Acct;
let sourceId: string;
const FACT = 'The launch codename of project Kestrel7Q is quasar41c0ffee.';

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  mem = memoryRows(db.orm);
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  client = new ApiClient(api.baseUrl);
  A = await account();
  B = await account();
  sourceId = await ingestText(A.key, 'kestrel.md', `# Project Kestrel7Q\n\n${FACT}\n\nProject Kestrel7Q was founded in the harbour town of Orlavik in 1987 and studies migrating terns.\n`);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

describe('modes', () => {
  it('evidence mode returns the fact with a cit_ handle, the exact span and the credit and quota headers', async () => {
    const r = await query(A.key, { mode: 'evidence', query: 'What is the launch codename of project Kestrel7Q?' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ schemaVersion: 'service-query-result-v1', mode: 'evidence', execution: 'ready', context: null, answer: null, requestedPreset: null, resolvedPreset: 'accuracy' });
    const top = r.body.evidence.find((e: Json) => e.text === FACT);
    expect(top, evidenceText(r.body)).toBeDefined();
    expect(top.citationHandle).toMatch(/^cit_[A-Za-z0-9_-]+$/);
    expect(top.origin).toMatchObject({ type: 'source', sourceId, filename: 'kestrel.md' });
    const [src] = await sql.query<{ text: string }>('select text from source where id = $1', [sourceId]);
    expect(src!.text.slice(top.origin.span.start, top.origin.span.end)).toBe(FACT);
    expect(r.body.citations.map((c: Json) => c.citationHandle)).toContain(top.citationHandle);
    expect(r.headers.get('x-service-credit-cost')).toBe('1');
    expect(r.headers.get('x-service-quota-metric')).toBe('query');
    expect(r.body.operation).toMatchObject({ replayed: false, credits: { cost: 1, reserved: 1, refunded: 0 } });
  });

  it('context mode returns bounded context.text with fragments marked by their handles', async () => {
    const r = await query(A.key, { mode: 'context', query: 'launch codename Kestrel7Q', preset: 'efficient' });
    expect(r.status).toBe(200);
    expect(r.body.context.text).toContain(FACT);
    const frag = r.body.context.fragments.find((f: Json) => f.text === FACT);
    expect(r.body.context.text).toContain(`[${frag.citationHandle}]`);
    expect(r.body.context.text.length).toBeLessThanOrEqual(r.body.context.maxChars);
    expect(r.body).toMatchObject({ answer: null, resolvedPreset: 'efficient', requestedPreset: 'efficient' });
  });

  it('answer mode (built-in) answers partially with every sentence cited by returned evidence', async () => {
    const r = await query(A.key, { mode: 'answer', query: 'What is the launch codename of project Kestrel7Q?' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ execution: 'ready', answer: { disposition: 'partial', answerer: 'builtin-extractive' } });
    expect(r.body.answer.text).toContain('quasar41c0ffee');
    const handles = new Set(r.body.evidence.map((e: Json) => e.citationHandle));
    for (const s of r.body.answer.sentences) {
      expect(s.citations.length).toBeGreaterThan(0);
      for (const h of s.citations) expect(handles.has(h)).toBe(true);
      const cited = r.body.evidence.filter((e: Json) => s.citations.includes(e.citationHandle)).map((e: Json) => e.text).join(' ');
      expect(cited).toContain(s.text);
    }
  });

  it('answer mode (built-in) answers "Who keeps the lighthouse?" from the sentence that says who, and says why when nothing does', async () => {
    const L = await account();
    await ingestText(L.key, 'skerrow.md', [
      '# Skerrow lighthouse', '',
      'The Skerrow lighthouse was first lit in 1851. Its lamp turns every twelve seconds.', '',
      'Keepers log the weather at the lighthouse every four hours.', '',
      'The lighthouse stands on a basalt cape, 47 metres above the sea.', '',
      'Maria Okafor has kept the lighthouse since 1998, and she knows every storm by name.', '',
    ].join('\n'));
    const r = await query(L.key, { mode: 'answer', query: 'Who keeps the lighthouse?' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ execution: 'ready', answer: { disposition: 'partial', text: 'Maria Okafor', answerer: 'builtin-extractive' } });
    const cited = r.body.evidence.find((e: Json) => e.citationHandle === r.body.answer.sentences[0].citations[0]);
    expect(cited.text).toContain('Maria Okafor has kept the lighthouse');
    const none = await query(L.key, { mode: 'answer', query: 'Who painted the lighthouse ceiling?' });
    expect(none.body).toMatchObject({ execution: 'ready', answer: { disposition: 'insufficient_evidence', sentences: [] } });
    expect(none.body.gaps).toContainEqual({ code: 'answer_not_stated', message: expect.stringContaining('"painted"'), terms: expect.arrayContaining(['painted']) });
  });

  it('answer mode with no supporting evidence is insufficient_evidence, never invented', async () => {
    const r = await query(A.key, { mode: 'answer', query: 'zebra xylophone quintessence' });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ execution: 'ready', answer: { disposition: 'insufficient_evidence', sentences: [] }, coverage: { status: 'insufficient_evidence' } });
    expect(r.body.gaps[0].code).toBe('no_evidence');
  });

  it('reports conflicting facts in conflicts and as a non-citable reasoning fragment', async () => {
    await ingestText(A.key, 'a.md', 'The harbour code of project Wren is red-4411.\n');
    await ingestText(A.key, 'b.md', 'The harbour code of project Wren is blue-9922.\n');
    const r = await query(A.key, { mode: 'context', query: 'harbour code of project Wren' });
    expect(r.body.conflicts.length, JSON.stringify(r.body.conflicts)).toBeGreaterThan(0);
    expect(r.body.conflicts[0].statements.join(' ')).toMatch(/red-4411[\s\S]*blue-9922|blue-9922[\s\S]*red-4411/);
    const note = r.body.context.fragments.find((f: Json) => f.kind === 'reasoning');
    expect(note).toMatchObject({ citable: false, citationHandle: null });
  });
});

describe('validation, scopes and presets', () => {
  it.each([
    ['unknown field', { mode: 'evidence', query: 'x', temperature: 1 }],
    ['missing query', { mode: 'evidence' }],
    ['query without selector in context mode', { mode: 'context' }],
    ['citationHandle together with query', { mode: 'evidence', query: 'x', citationHandle: `cit_${'a'.repeat(40)}` }],
    ['citationHandle outside evidence mode', { mode: 'context', citationHandle: `cit_${'a'.repeat(40)}` }],
    ['empty source_ids', { mode: 'evidence', query: 'x', source_ids: [] }],
  ])('%s -> 400 validation_error', async (_label, body) => {
    expectError(await query(A.key, body), 400, 'validation_error');
  });

  it('answer mode without query.answer is 403 query_answer_not_authorized; no query scope is 403 forbidden', async () => {
    expectError(await query(await keyFor(A.id, { scopes: ['query'] }), { mode: 'answer', query: 'x y' }), 403, 'query_answer_not_authorized');
    expectError(await query(await keyFor(A.id, { scopes: ['ingest'] }), { mode: 'evidence', query: 'x y' }), 403, 'forbidden');
  });

  it('a preset above the ceiling is 403 preset_not_authorized; an omitted preset resolves to the ceiling', async () => {
    const eff = await keyFor(A.id, { maxPreset: 'efficient' });
    expectError(await query(eff, { mode: 'evidence', query: 'x y', preset: 'accuracy' }), 403, 'preset_not_authorized');
    const r = await query(eff, { mode: 'evidence', query: 'Kestrel7Q' });
    expect(r.body).toMatchObject({ requestedPreset: null, resolvedPreset: 'efficient' });
  });
});

describe('citations', () => {
  it('an exact lookup resolves a handle; an altered, unknown or foreign handle is a gap without internal ids', async () => {
    const base = await query(A.key, { mode: 'evidence', query: 'launch codename Kestrel7Q' });
    const handle = base.body.evidence.find((e: Json) => e.text === FACT).citationHandle as string;
    const exact = await query(A.key, { mode: 'evidence', citationHandle: handle });
    expect(exact.body.evidence).toHaveLength(1);
    expect(exact.body.evidence[0]).toMatchObject({ text: FACT, citationHandle: handle });
    expect(exact.body.stopReason).toBe('citation_resolved');

    const forged = `${handle.slice(0, -3)}${handle.endsWith('AAA') ? 'BBB' : 'AAA'}`;
    for (const [who, h] of [[A.key, forged], [A.key, `cit_${'x'.repeat(60)}`], [B.key, handle]] as const) {
      const r = await query(who, { mode: 'evidence', citationHandle: h });
      expect(r.status).toBe(200);
      expect(r.body.evidence).toEqual([]);
      expect(r.body.gaps[0]).toMatchObject({ code: 'citation_unavailable' });
      const { operation: _op, ...rest } = r.body;
      expect(JSON.stringify(rest).match(UUID)).toBeNull();
      expect(JSON.stringify(r.body)).not.toContain('quasar41c0ffee');
    }
  });
});

describe('authorized context', () => {
  it('another account never sees this account\'s evidence', async () => {
    const r = await query(B.key, { mode: 'evidence', query: 'launch codename of project Kestrel7Q' });
    expect(r.status).toBe(200);
    expect(JSON.stringify(r.body)).not.toContain('quasar41c0ffee');
  });

  it('quarantined and deleted sources are never returned', async () => {
    const q1 = await ingestText(A.key, 'q.md', 'The vault colour of project Heron is teal8812.\n');
    const d1 = await ingestText(A.key, 'd.md', 'The vault colour of project Ibis is amber5521.\n');
    expect(evidenceText((await query(A.key, { mode: 'evidence', query: 'vault colour Heron' })).body)).toContain('teal8812');
    await sql.query("update source set status = 'quarantined' where id = $1", [q1]);
    expect(evidenceText((await query(A.key, { mode: 'evidence', query: 'vault colour Heron teal8812' })).body)).not.toContain('teal8812');
    const del = await client.delete(`/v1/sources/${d1}`, { as: { bearer: A.key } });
    expect(del.status).toBe(202);
    for (let i = 0; i < 120; i++) {
      const j = await client.get(`/v1/ingest/jobs/${del.body.job.id}`, { as: { bearer: A.key } });
      if (j.body.job.status === 'succeeded') break;
      await new Promise((res) => setTimeout(res, 250));
    }
    expect(evidenceText((await query(A.key, { mode: 'evidence', query: 'vault colour Ibis amber5521' })).body)).not.toContain('amber5521');
  });

  it('identical content ingested twice yields one piece of evidence', async () => {
    const text = 'The lantern number of project Plover is 77123.\n';
    await ingestText(A.key, 'p1.md', text);
    await ingestText(A.key, 'p2.md', text);
    const r = await query(A.key, { mode: 'evidence', query: 'lantern number of project Plover' });
    const texts = r.body.evidence.map((e: Json) => e.text);
    expect(texts.filter((t: string) => t.includes('77123') && t.trim() === text.trim()).length).toBe(1);
    expect(new Set(texts).size).toBe(texts.length);
  });

  it('source_ids narrows to those sources; a foreign or unknown source, peer, session or workspace is 403', async () => {
    const other = await ingestText(A.key, 'o.md', 'Kestrel7Q also appears in this unrelated note about gulls.\n');
    const r = await query(A.key, { mode: 'evidence', query: 'Kestrel7Q', source_ids: [other] });
    expect(r.body.evidence.length).toBeGreaterThan(0);
    for (const e of r.body.evidence) expect(e.origin).toMatchObject({ type: 'source', sourceId: other });
    const bSource = await ingestText(B.key, 'b.md', 'Account B keeps its own notes.\n');
    expectError(await query(A.key, { mode: 'evidence', query: 'notes', source_ids: [bSource] }), 403, 'forbidden');
    expectError(await query(A.key, { mode: 'evidence', query: 'notes', source_ids: [randomUUID()] }), 403, 'forbidden');
    expectError(await query(A.key, { mode: 'evidence', query: 'notes', peer_ids: ['nobody'] }), 403, 'forbidden');
    expectError(await query(A.key, { mode: 'evidence', query: 'notes', session_ids: ['nowhere'] }), 403, 'forbidden');
    expectError(await query(A.key, { mode: 'evidence', query: 'notes', workspace: 'other' }), 403, 'forbidden');
  });
});

describe('native memory', () => {
  it('returns available messages and current eligible claims only, narrowed by peer, session and agent', async () => {
    const alice = await mem.peer(A.id, 'alice');
    const bob = await mem.peer(A.id, 'bob');
    const s1 = await mem.session(A.id, 's1');
    const s2 = await mem.session(A.id, 's2');
    await mem.message(A.id, { peerId: alice, sessionId: s1, content: 'My favourite tea blend is smoky lapsang9.', agentId: 'agent-x' });
    await mem.message(A.id, { peerId: alice, sessionId: s1, content: 'My favourite tea blend is pending earlgrey3.', available: false });
    await mem.message(A.id, { peerId: bob, sessionId: s2, content: 'My favourite tea blend is green sencha5.' });
    await mem.claim(A.id, { peerId: alice, sessionId: s1, content: 'Alice prefers window seats on trains.' });
    await mem.claim(A.id, { peerId: alice, content: 'Alice prefers aisle seats on trains.', state: 'withdrawn' });
    await mem.claim(A.id, { peerId: alice, content: 'Alice prefers corridor seats on trains.', state: 'pending_review', eligibility: 'not_eligible' });

    const all = await query(A.key, { mode: 'evidence', query: 'favourite tea blend' });
    expect(evidenceText(all.body)).toContain('lapsang9');
    expect(evidenceText(all.body)).toContain('sencha5');
    expect(evidenceText(all.body)).not.toContain('earlgrey3');
    const msg = all.body.evidence.find((e: Json) => e.text.includes('lapsang9'));
    expect(msg.origin).toMatchObject({ type: 'message', peer: 'alice', session: 's1', agentId: 'agent-x' });

    const byPeer = await query(A.key, { mode: 'evidence', query: 'favourite tea blend', peer_ids: ['bob'] });
    expect(evidenceText(byPeer.body)).toContain('sencha5');
    expect(evidenceText(byPeer.body)).not.toContain('lapsang9');
    expect(evidenceText(byPeer.body)).not.toContain('Kestrel7Q');
    const bySession = await query(A.key, { mode: 'evidence', query: 'favourite tea blend', session_ids: ['s1'] });
    expect(evidenceText(bySession.body)).toContain('lapsang9');
    expect(evidenceText(bySession.body)).not.toContain('sencha5');
    const byAgent = await query(A.key, { mode: 'evidence', query: 'favourite tea blend', agent_id: 'agent-x' });
    expect(byAgent.body.evidence.map((e: Json) => e.text)).toEqual(['My favourite tea blend is smoky lapsang9.']);

    const seats = await query(A.key, { mode: 'evidence', query: 'Alice seats on trains' });
    expect(evidenceText(seats.body)).toContain('window seats');
    expect(evidenceText(seats.body)).not.toContain('aisle seats');
    expect(evidenceText(seats.body)).not.toContain('corridor seats');

    const scoped = await query(A.key, { mode: 'context', peer_ids: ['alice'] });
    expect(scoped.status).toBe(200);
    expect(scoped.body.context.text).toContain('lapsang9');
  });

  it('a corrected claim (correction_memory) outranks an inferred one', async () => {
    const carol = await mem.peer(A.id, 'carol');
    await mem.claim(A.id, { peerId: carol, content: 'Carol lives in the city of Tromsdal.', authority: 'inferred' });
    await mem.claim(A.id, { peerId: carol, content: 'Carol lives in the city of Bergsund.', authority: 'correction_memory' });
    for (const preset of ['accuracy', 'efficient']) {
      const r = await query(A.key, { mode: 'evidence', query: 'Which city does Carol live in?', peer_ids: ['carol'], preset });
      expect(r.body.evidence[0].text, preset).toContain('Bergsund');
      expect(r.body.evidence[0].origin).toMatchObject({ type: 'claim', authority: 'correction_memory' });
    }
  });
});

describe('audiences', () => {
  it('a limited key stamps what it ingests, sees only its audiences, and a selector outside them is 403', async () => {
    const teamA = await keyFor(A.id, { audiences: ['team-a'] });
    const teamB = await keyFor(A.id, { audiences: ['team-b'] });
    const access = await client.get('/v1/access', { as: { bearer: teamA } });
    expect(access.body.contextBoundary.audiences).toEqual(['team-a']);
    const id = await ingestText(teamA, 'ta.md', 'The orbit code of project Tern is orbit6610.\n');
    expect(await sql.query('select audience from source where id = $1', [id])).toEqual([{ audience: 'team-a' }]);

    expect(evidenceText((await query(teamA, { mode: 'evidence', query: 'orbit code Tern' })).body)).toContain('orbit6610');
    const fromB = await query(teamB, { mode: 'evidence', query: 'orbit code of project Tern, launch codename of Kestrel7Q' });
    expect(JSON.stringify(fromB.body)).not.toContain('orbit6610');
    expect(JSON.stringify(fromB.body)).not.toContain('quasar41c0ffee'); // unlabelled content is outside a limited key
    expectError(await query(teamB, { mode: 'evidence', query: 'orbit', audience: 'team-a' }), 403, 'forbidden');
    const narrowed = await query(A.key, { mode: 'evidence', query: 'orbit code Tern launch codename Kestrel7Q', audience: 'team-a' });
    expect(evidenceText(narrowed.body)).toContain('orbit6610');
    expect(evidenceText(narrowed.body)).not.toContain('quasar41c0ffee');
    const handle = narrowed.body.evidence[0].citationHandle;
    expect((await query(teamB, { mode: 'evidence', citationHandle: handle })).body.evidence).toEqual([]);
  });
});

describe('idempotency and metering', () => {
  it('an exact retry replays the stored result and headers without spending; other inputs are 409', async () => {
    const body = { idempotencyKey: `r-${randomUUID()}`, mode: 'evidence', query: 'launch codename Kestrel7Q' };
    const r1 = await client.post('/v1/query', { as: { bearer: A.key }, body });
    const r2 = await client.post('/v1/query', { as: { bearer: A.key }, body });
    expect(r2.status).toBe(200);
    const strip = (b: Json) => ({ ...b, operation: undefined });
    expect(strip(r2.body)).toEqual(strip(r1.body));
    expect(r2.body.operation).toMatchObject({ replayed: true });
    for (const h of ['x-service-credit-remaining', 'x-service-credit-cost', 'x-service-quota-daily-remaining']) {
      expect(r2.headers.get(h)).toBe(r1.headers.get(h));
    }
    const r3 = await query(A.key, { mode: 'evidence', query: 'something else' });
    expect(Number(r3.headers.get('x-service-credit-remaining'))).toBe(Number(r1.headers.get('x-service-credit-remaining')) - 1);
    expectError(await client.post('/v1/query', { as: { bearer: A.key }, body: { ...body, query: 'changed' } }), 409, 'idempotency_conflict');
  });

  it('a running operation is 409 operation_in_progress; an expired one 409 idempotency_expired', async () => {
    const key = `run-${randomUUID()}`;
    const body = { idempotencyKey: key, mode: 'evidence', query: 'Kestrel7Q' };
    const first = await client.post('/v1/query', { as: { bearer: A.key }, body });
    expect(first.status).toBe(200);
    await sql.query("update query_operation set status = 'running' where idempotency_key = $1", [key]);
    expectError(await client.post('/v1/query', { as: { bearer: A.key }, body }), 409, 'operation_in_progress');
    await sql.query("update query_operation set status = 'completed', created_at = now() - interval '25 hours' where idempotency_key = $1", [key]);
    expectError(await client.post('/v1/query', { as: { bearer: A.key }, body }), 409, 'idempotency_expired');
  });

  it('100 concurrent identical queries with one key: one operation, one debit; the rest replay or are operation_in_progress', async () => {
    const acct = await account({ credits: 50 });
    const body = { idempotencyKey: `c-${randomUUID()}`, mode: 'evidence', query: 'launch codename Kestrel7Q' };
    const results = await Promise.all(Array.from({ length: 100 }, () => client.post('/v1/query', { as: { bearer: acct.key }, body })));
    // Spec 7 and 8 rule 5: one request runs the operation; a loser gets its stored result replayed when
    // it has completed, and 409 operation_in_progress (with retry-after) while it still runs.
    const ran = results.filter((r) => r.status === 200 && r.body.operation.replayed !== true);
    const replayed = results.filter((r) => r.status === 200 && r.body.operation.replayed === true);
    const inProgress = results.filter((r) => r.status === 409);
    expect(ran).toHaveLength(1);
    expect(ran.length + replayed.length + inProgress.length).toBe(100);
    for (const r of inProgress) {
      expectError(r, 409, 'operation_in_progress');
      expect(r.headers.get('retry-after')).toBe('1');
    }
    const strip = (b: Json) => ({ ...b, operation: undefined });
    for (const r of replayed) {
      expect(strip(r.body)).toEqual(strip(ran[0]!.body));
      expect(r.headers.get('x-service-credit-remaining')).toBe(ran[0]!.headers.get('x-service-credit-remaining'));
    }
    expect(ran[0]!.headers.get('x-service-credit-cost')).toBe('1');
    console.info(`100 concurrent queries: 1 ran, ${replayed.length} replayed, ${inProgress.length} operation_in_progress`);
    // One operation, one reservation with one reserve and one charge, one quota unit, one credit spent.
    expect(await sql.query('select status from query_operation where account_id = $1', [acct.id])).toEqual([{ status: 'completed' }]);
    // Evidence mode reserves no provider work: nothing to refund.
    const ledger = await sql.query<{ kind: string; amount: number }>(
      'select kind, amount from credit_ledger where account_id = $1 and reservation_id is not null order by kind', [acct.id]);
    expect(ledger).toEqual([{ kind: 'charge', amount: 1 }, { kind: 'reserve', amount: 1 }]);
    expect(await sql.count('select 1 from credit_reservation where account_id = $1', [acct.id])).toBe(1);
    expect(await sql.query(`select used from quota_usage where account_id = $1 and metric = 'query' and period = 'day'`, [acct.id])).toEqual([{ used: 1 }]);
    const [balance] = await sql.query('select monthly_remaining + onboarding_remaining as total from credit_balance where account_id = $1', [acct.id]);
    expect(balance.total).toBe(49);
    // Afterwards an exact retry replays without spending.
    const again = await client.post('/v1/query', { as: { bearer: acct.key }, body });
    expect(again.status).toBe(200);
    expect(again.body.operation).toMatchObject({ replayed: true });
    expect(again.headers.get('x-service-credit-remaining')).toBe('49');
  });

  it('402 without credits; with the daily allowance spent a completed query still replays', async () => {
    const broke = await account({ credits: 0 });
    expectError(await query(broke.key, { mode: 'evidence', query: 'x y' }), 402, 'account_credits_exhausted');
    const one = await account({ queryDailyLimit: 1 });
    const body = { idempotencyKey: `d-${randomUUID()}`, mode: 'evidence', query: 'anything here' };
    const r1 = await client.post('/v1/query', { as: { bearer: one.key }, body });
    expect(r1.status).toBe(200);
    expectError(await query(one.key, { mode: 'evidence', query: 'second' }), 429, 'account_quota_exceeded');
    const replay = await client.post('/v1/query', { as: { bearer: one.key }, body });
    expect(replay.status).toBe(200);
    expect(replay.body.evidence).toEqual(r1.body.evidence);
    // A refused request released its key: nothing is stored for it.
    expect(await sql.count("select 1 from query_operation where account_id = $1", [one.id])).toBe(1);
  });

  it('a new claim reserves with its operation id in the same statement; a balance from a past period is renewed first', async () => {
    const a = await account({ credits: 40 });
    // The balance's period ended: the claim's reservation answers stale, the balance is renewed, then reserved.
    await sql.query("update credit_balance set period_start = period_start - interval '3 months', monthly_remaining = 0 where account_id = $1", [a.id]);
    const r = await query(a.key, { mode: 'evidence', query: 'renewed balance' });
    expect(r.status).toBe(200);
    expect(r.headers.get('x-service-credit-remaining')).toBe('39');
    const rows = await sql.query<{ op: string; reservation: string | null; status: string | null; charged: number | null }>(
      `select o.id as op, r.id as reservation, r.status, r.charged from query_operation o
         left join credit_reservation r on r.id = o.id where o.account_id = $1`, [a.id]);
    expect(rows).toEqual([{ op: rows[0]!.op, reservation: rows[0]!.op, status: 'settled', charged: 1 }]);
    // The next query takes the one-statement path (the balance is current): same shape.
    expect((await query(a.key, { mode: 'evidence', query: 'current balance' })).headers.get('x-service-credit-remaining')).toBe('38');
    expect(await sql.count("select 1 from query_operation o join credit_reservation r on r.id = o.id where o.account_id = $1 and r.status = 'settled'", [a.id])).toBe(2);
  });

  it('the browser-session route runs the same engine with csrf; API keys are refused there', async () => {
    const cookie = await signIn(client, A);
    const r = await client.post('/v1/account/answers/query', { as: { cookie }, body: { idempotencyKey: `b-${randomUUID()}`, mode: 'evidence', query: 'launch codename Kestrel7Q' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(evidenceText(r.body)).toContain('quasar41c0ffee');
    expect(r.headers.get('x-service-credit-cost')).toBe('1');
    const noCsrf = await client.post('/v1/account/answers/query', { as: { cookie }, csrf: false, body: { idempotencyKey: `b-${randomUUID()}`, mode: 'evidence', query: 'x y' } });
    expect(noCsrf.status).toBe(403);
    expect((await client.post('/v1/account/answers/query', { as: { bearer: A.key }, body: { idempotencyKey: `b-${randomUUID()}`, mode: 'evidence', query: 'x y' } })).status).toBe(401);
  });
});

describe('answer provider (OpenAI-compatible)', () => {
  let provider: http.Server;
  let providerUrl: string;
  let reply: (body: Json) => { status: number; json: Json };
  const seen: Json[] = [];

  beforeAll(async () => {
    provider = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw);
        seen.push({ path: req.url, body });
        const out = reply(body);
        res.writeHead(out.status, { 'content-type': 'application/json' }).end(JSON.stringify(out.json));
      });
    });
    await new Promise<void>((r) => provider.listen(0, '127.0.0.1', r));
    providerUrl = `http://127.0.0.1:${(provider.address() as AddressInfo).port}/v1`;
  });
  afterAll(() => new Promise<void>((r) => provider.close(() => r())));

  async function withProvider(env: Record<string, string>, fn: (base: ApiClient) => Promise<void>) {
    const a = await startApi({ orm: db.orm, temporal, taskQueue, env });
    try {
      await fn(new ApiClient(a.baseUrl));
    } finally {
      await a.close();
    }
  }
  const ask = (c: ApiClient) =>
    c.post('/v1/query', { as: { bearer: A.key }, body: { idempotencyKey: `p-${randomUUID()}`, mode: 'answer', query: 'What is the launch codename of project Kestrel7Q?' } });

  it('keeps supported cited sentences, drops unsupported ones, and charges provider work within the reservation', async () => {
    reply = (body) => {
      const handle = /\[(cit_[A-Za-z0-9_-]+)\] \([^)]*\) The launch codename/.exec(body.messages[1].content)?.[1];
      return {
        status: 200,
        json: {
          choices: [{ message: { role: 'assistant', content: `The launch codename of project Kestrel7Q is quasar41c0ffee [${handle}]. The project has a budget of 9 million euros [${handle}]. It was founded in 1999 [cit_${'z'.repeat(40)}].` } }],
          usage: { prompt_tokens: 2500, completion_tokens: 100, total_tokens: 2600 },
        },
      };
    };
    await withProvider({ ANSWER_PROVIDER: 'openai', ANSWER_PROVIDER_URL: providerUrl, ANSWER_PROVIDER_MODEL: 'test-model' }, async (c) => {
      const r = await ask(c);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toMatchObject({ execution: 'ready', answer: { disposition: 'partial', answerer: 'provider', droppedSentences: 2 } });
      expect(r.body.answer.sentences).toEqual([{ text: 'The launch codename of project Kestrel7Q is quasar41c0ffee.', citations: [expect.stringMatching(/^cit_/)] }]);
      expect(r.body.operation.provider).toMatchObject({ called: true, model: 'test-model', usage: { totalTokens: 2600 }, credits: 2 });
      expect(r.headers.get('x-service-credit-cost')).toBe('3');
      expect(r.body.operation.credits).toMatchObject({ cost: 3, reserved: 3, refunded: 0 });
      expect(seen.at(-1)!.body.model).toBe('test-model');
    });
  });

  it('a failing provider is degraded (answer null, base credit kept, provider work refunded)', async () => {
    reply = () => ({ status: 500, json: { error: 'boom' } });
    await withProvider({ ANSWER_PROVIDER: 'openai', ANSWER_PROVIDER_URL: providerUrl, ANSWER_PROVIDER_MODEL: 'm' }, async (c) => {
      const r = await ask(c);
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ execution: 'degraded', answer: null, stopReason: 'provider_failed' });
      expect(r.body.evidence.length).toBeGreaterThan(0);
      expect(r.headers.get('x-service-credit-cost')).toBe('1');
      expect(r.body.operation.credits).toMatchObject({ cost: 1, reserved: 3, refunded: 2 });
    });
  });

  it('answering disabled is provider_required with answer null', async () => {
    await withProvider({ ANSWER_PROVIDER: 'disabled' }, async (c) => {
      const r = await ask(c);
      expect(r.body).toMatchObject({ execution: 'provider_required', answer: null, stopReason: 'provider_required' });
      expect(r.body.context.text).toContain('quasar41c0ffee');
    });
  });
});
