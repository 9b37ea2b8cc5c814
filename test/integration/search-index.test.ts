import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Migration0022SearchStatistics } from '../../platform/db/migrations/0022-search-statistics.ts';
import { bound, sql } from '../../platform/db/sql.ts';
import { deleteSourceRecords } from '../../core/ingest/build/build.ts';
import type { Filter, QueryWord } from '../../core/retrieval/account-index.ts';
import { ADJACENT_WEIGHT, B, K1, NEIGHBOUR_DECAY } from '../../core/retrieval/bm25.ts';
import type { Boundary } from '../../core/retrieval/boundary.ts';
import { fallbackStatistics } from '../../core/retrieval/candidates.queries.ts';
import type { Strategy } from '../../core/retrieval/ranking.ts';
import { PLANS, queryWords, retrieve, type Plan } from '../../core/retrieval/retrieve.ts';
import { createSearchIndex, type SearchIndex } from '../../core/retrieval/search-index.ts';
import { memoryVersion, recordVersion } from '../../core/retrieval/search-index.queries.ts';
import { parseTsVector } from '../../core/retrieval/text.ts';
import { retrievalSet } from '../fixtures/query/retrieval-set.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { memoryRows } from '../helpers/memory-rows.ts';
import { ingestMarkdown } from '../helpers/source-rows.ts';

// The account search index (core/retrieval/account-index.ts, search-index.ts): BM25 over records,
// messages and claims with the account's exact statistics, neighbours in a conversation, a claim and its
// message as one hit; the API's copy used only at or past the account's versions, never widening the
// boundary, and kept within its memory budget; without a copy, PostgreSQL's candidates ranked alike.

let db: TestDatabase;
let A: string;
let B2: string;
let index: SearchIndex;
let mem: ReturnType<typeof memoryRows>;
const sources: string[] = [];
const set = retrievalSet();

const ingest = (accountId: string, text: string, filename?: string) => ingestMarkdown(db.orm, accountId, text, filename);
const em = () => db.orm.em.fork();
const EVERYTHING: Filter = { records: true, memory: true, audiences: null, sourceIds: null, peerIds: null, sessionIds: null, agentId: null };

const boundary = (accountId: string, over: Partial<Boundary> = {}): Boundary => ({
  accountId, audiences: null, includeSources: true, includeMemory: true, sourceIds: null, peerIds: null, sessionIds: null, agentId: null, ...over,
});

const versions = async (accountId: string) => {
  const [v] = await bound<{ r: string; m: string }>(em(), sql`select ${recordVersion(accountId)} as r, ${memoryVersion(accountId)} as m`);
  return { records: Number(v!.r), memory: Number(v!.m) };
};

/** The copy of an account at its current versions (refreshing it first). */
async function copyOf(accountId: string, from = index) {
  const copy = await from.current(accountId, await versions(accountId), 30_000);
  expect(copy).not.toBeNull();
  return copy!;
}

/** A query's words as retrieve() searches them (each word's own lexemes, exact). */
async function wordsOf(text: string): Promise<QueryWord[]> {
  const rows = await bound<{ l: string[] }>(em(),
    sql`select tsvector_to_array(to_tsvector('english', w)) as l from unnest(${queryWords(text)}::text[]) with ordinality x(w, n) order by n`);
  return rows.filter((r) => r.l.length).map((r) => r.l.map((lexeme) => ({ lexeme, prefix: false })));
}

/** BM25 of every searchable document of the account, computed here from the stored vectors. */
async function reference(accountId: string, words: QueryWord[]): Promise<Map<string, number>> {
  const docs = await bound<{ id: string; kind: number; tsv: string }>(em(), sql`
    select r.id, 0 as kind, r.tsv::text as tsv from record r join source s on s.id = r.source_id where r.account_id = ${accountId} and s.status = 'active'
    union all select id, 1, tsv::text from memory_message where account_id = ${accountId} and available
    union all select id, 2, tsv::text from memory_claim where account_id = ${accountId} and state = 'current' and eligibility = 'eligible'`);
  const parsed = docs.map((d) => ({ ...d, v: parseTsVector(d.tsv) }));
  const n = [0, 0, 0];
  const total = [0, 0, 0];
  const df = new Map<string, number>();
  for (const d of parsed) {
    n[d.kind]!++;
    total[d.kind]! += d.v.length;
    for (const l of d.v.positions.keys()) df.set(l, (df.get(l) ?? 0) + 1);
  }
  const N = n[0]! + n[1]! + n[2]!;
  const scores = new Map<string, number>();
  for (const d of parsed) {
    let s = 0;
    for (const w of words) {
      let best = 0;
      for (const { lexeme } of w) {
        const p = d.v.positions.get(lexeme);
        if (!p) continue;
        const tf = Math.max(1, p.length);
        const idf = Math.log(1 + (N - df.get(lexeme)! + 0.5) / (df.get(lexeme)! + 0.5));
        best = Math.max(best, (idf * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * d.v.length) / (total[d.kind]! / n[d.kind]!))));
      }
      s += best;
    }
    if (s > 0) scores.set(d.id, s);
  }
  return scores;
}

beforeAll(async () => {
  db = await createTestDatabase();
  mem = memoryRows(db.orm);
  A = (await createTestAccount(db.orm)).id;
  B2 = (await createTestAccount(db.orm)).id;
  index = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
  // Loaded in two steps, so the copy the tests compare was also extended incrementally (new documents
  // and lexemes merged into the orders already built).
  for (const [i, d] of set.documents.entries()) {
    sources.push(await ingest(A, d.text, d.filename));
    if (i === 29) expect(await index.warm(A)).toBe(true);
  }
  for (const c of set.conversations.slice(0, 10)) {
    const peer = await mem.peer(A, c.peer);
    const session = await mem.session(A, c.session);
    for (const content of c.messages) await mem.message(A, { peerId: peer, sessionId: session, content });
    for (const cl of c.claims) await mem.claim(A, { peerId: peer, sessionId: session, content: cl.content, authority: cl.authority });
  }
  await ingest(B2, set.documents[0]!.text, set.documents[0]!.filename);
  expect(await index.warm(A)).toBe(true);
}, 180_000);

afterAll(async () => {
  await db?.drop();
});

describe('ranking', () => {
  const questions = set.questions.filter((_, i) => i % 3 === 0).map((q) => q.question);

  it('scores every document of the account that holds a query word by BM25 with the account\'s statistics', async () => {
    let compared = 0;
    const kinds = new Set<number>();
    for (const q of questions) {
      const words = await wordsOf(q);
      const want = await reference(A, words);
      const { hits } = (await copyOf(A)).search(EVERYTHING, words, { limit: 1_000_000, adjacency: false });
      expect(hits.length).toBe(want.size);
      for (const h of hits) {
        expect(h.score).toBeCloseTo(want.get(h.id)!, 9);
        kinds.add(h.kind);
      }
      // Best first, and equal scores in id order.
      for (let i = 1; i < hits.length; i++) {
        expect(hits[i - 1]!.score > hits[i]!.score || (hits[i - 1]!.score === hits[i]!.score && hits[i - 1]!.id < hits[i]!.id)).toBe(true);
      }
      compared += hits.length;
    }
    expect(compared).toBeGreaterThan(500);
    expect(kinds).toEqual(new Set([0, 1, 2]));
  });

  it('the statistics PostgreSQL counts are the copy\'s: documents and length per kind, document frequencies', async () => {
    const copy = await copyOf(A);
    const own = copy.statistics();
    const lexemes = [...new Set((await Promise.all(questions.slice(0, 20).map(wordsOf))).flat(2).map((t) => t.lexeme))];
    const sql = await fallbackStatistics(em(), A, lexemes);
    expect(sql.docs).toEqual(own.docs);
    expect(sql.length).toEqual(own.length);
    expect(own.docs.every((n) => n > 0)).toBe(true);
    for (const l of lexemes) expect([l, sql.df(l)]).toEqual([l, own.df(l)]);
  });

  it('the best k are the first k of the whole order, ties at the cut broken by id', async () => {
    const copy = await copyOf(A);
    let tiedCuts = 0;
    for (const q of questions) {
      const words = (await wordsOf(q)).map((w) => w.map((t) => ({ ...t, prefix: t.lexeme.length >= 5 })));
      const all = copy.search(EVERYTHING, words, { limit: 1_000_000, adjacency: true }).hits;
      for (const k of [1, 7, 30, 120]) {
        expect(copy.search(EVERYTHING, words, { limit: k, adjacency: true }).hits).toEqual(all.slice(0, k));
        if (all.length > k && all[k - 1]!.score === all[k]!.score) tiedCuts++;
      }
    }
    // Some cuts fall inside a run of equal scores, where only the ids decide.
    expect(tiedCuts).toBeGreaterThan(0);
  });

  it.each([['efficient', PLANS.efficient], ['accuracy', PLANS.accuracy]] as [Strategy, Plan][])(
    'retrieve (%s) ranks alike with the copy and from PostgreSQL\'s candidates', async (strategy, plan) => {
    // A small account, where PostgreSQL's candidates are every match: both paths see the same documents.
    const C = (await createTestAccount(db.orm)).id;
    for (const d of set.documents.slice(0, 3)) await ingest(C, d.text, d.filename);
    const c0 = set.conversations[0]!;
    const peer = await mem.peer(C, c0.peer);
    const session = await mem.session(C, c0.session);
    for (const content of c0.messages) await mem.message(C, { peerId: peer, sessionId: session, content });
    const own = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    const extra = ['e-mail the harbour-station survey budget', 'zyxwv harbour terns', `where does ${c0.peer} live`];
    let answered = 0;
    for (const q of [...set.questions.slice(0, 15).map((x) => x.question), ...extra]) {
      const plain = await retrieve(em(), boundary(C), { query: q, strategy }, { plan });
      const fast = await retrieve(em(), boundary(C), { query: q, strategy }, { index: own, plan });
      if (plain.ranked.length) answered++;
      expect(fast.ranked.slice(0, 10).map((c) => c.ref.id)).toEqual(plain.ranked.slice(0, 10).map((c) => c.ref.id));
      // The same scores (the recency prior moves with the clock between the two calls).
      for (const [i, c] of fast.ranked.slice(0, 10).entries()) expect(c.score).toBeCloseTo(plain.ranked[i]!.score, 6);
      expect(fast.matchedTerms).toEqual(plain.matchedTerms);
      expect(fast.unmatchedTerms).toEqual(plain.unmatchedTerms);
    }
    expect(answered).toBeGreaterThan(10);
  });
});

describe('conversations', () => {
  let M: string;
  let talk: { a: string; b: string; s1: string; s2: string };
  const ids: string[] = [];
  const at = (minute: number) => new Date(Date.UTC(2023, 4, 8, 13, minute));

  beforeAll(async () => {
    M = (await createTestAccount(db.orm)).id;
    talk = { a: await mem.peer(M, 'Caroline'), b: await mem.peer(M, 'Melanie'), s1: await mem.session(M, 's1'), s2: await mem.session(M, 's2') };
    const turns: [string, string][] = [
      [talk.a, 'Did you finally visit the lighthouse at Kelvara?'],
      [talk.b, 'Yes! Last spring, with my sister and the dogs.'],
      [talk.a, 'That sounds lovely, what else did you do?'],
      [talk.b, 'We went to a pottery class on the way back.'],
      [talk.a, 'I went to a support group yesterday, it was powerful.'],
    ];
    for (const [i, [peer, content]] of turns.entries()) ids.push((await mem.message(M, { peerId: peer, sessionId: talk.s1, content, createdAt: at(i) })).id);
    await mem.message(M, { peerId: talk.b, sessionId: talk.s2, content: 'Another day, another session, nothing about towers.', createdAt: at(30) });
  });

  it('a message is helped by its neighbours in the session: half the best score one turn away, a quarter two turns away', async () => {
    const copy = await copyOf(M);
    const words = await wordsOf('lighthouse Kelvara');
    const alone = copy.search(EVERYTHING, words, { limit: 10, adjacency: false }).hits;
    expect(alone.map((h) => h.id)).toEqual([ids[0]]);
    const s = alone[0]!.score;
    const hits = copy.search(EVERYTHING, words, { limit: 10, adjacency: true }).hits;
    expect(hits.map((h) => [h.id, h.score])).toEqual([[ids[0], s], [ids[1], ADJACENT_WEIGHT * s], [ids[2], ADJACENT_WEIGHT * NEIGHBOUR_DECAY * s]]);
    // Neighbours outside the boundary give and get nothing.
    const onlyCaroline = copy.search({ ...EVERYTHING, peerIds: new Set([talk.a]) }, words, { limit: 10, adjacency: true }).hits;
    expect(onlyCaroline.map((h) => [h.id, h.score])).toEqual([[ids[0], s], [ids[2], ADJACENT_WEIGHT * NEIGHBOUR_DECAY * s]]);
    // Through the query: the answer, which holds none of the question's words, is among the evidence.
    const r = await retrieve(em(), boundary(M), { query: 'Who went to the lighthouse at Kelvara and when?', strategy: 'efficient' }, { index });
    expect(r.ranked.slice(0, 3).map((c) => c.ref.id)).toContain(ids[1]);
  });

  it('finds a message by who said it and the date it was said; the evidence is the message as written', async () => {
    for (const opts of [{ index }, {}]) {
      const r = await retrieve(em(), boundary(M), { query: 'What did Caroline do on 8 May 2023?', strategy: 'efficient' }, opts);
      const support = r.ranked.find((c) => c.ref.id === ids[4]);
      expect(support).toBeDefined();
      expect(support!.text).toBe('I went to a support group yesterday, it was powerful.');
    }
    const rows = await bound<{ tsv: string }>(em(), sql`select tsv::text as tsv from memory_message where id = ${ids[4]}`);
    expect(rows[0]!.tsv).toMatch(/'carolin'/);
    expect(rows[0]!.tsv).toMatch(/'2023'/);
    expect(rows[0]!.tsv).toMatch(/'may'/);
  });

  it('a claim and the message it was derived from are one piece of evidence, the claim citing the message', async () => {
    const msg = await mem.message(M, { peerId: talk.a, sessionId: talk.s2, content: 'By the way, I moved to Porto in March.', createdAt: at(40) });
    const claim = await mem.claim(M, { peerId: talk.a, sessionId: talk.s2, content: 'Caroline lives in Porto.', messageId: msg.id, span: [12, 38] });
    for (const opts of [{ index }, {}]) {
      const r = await retrieve(em(), boundary(M), { query: 'Where does Caroline live, Porto?', strategy: 'accuracy' }, opts);
      const both = r.ranked.filter((c) => c.ref.id === msg.id || c.ref.id === claim);
      expect(both).toHaveLength(1);
      expect(both[0]!.ref.id).toBe(claim);
      expect(both[0]!.supports?.map((m) => m.ref.id)).toEqual([msg.id]);
    }
    // A claim the user corrected cites the correction, not the message: it stands on its own.
    await bound(em(), sql`update memory_claim set content = 'Caroline lives in Braga.', authority = 'correction_memory' where id = ${claim}`);
    const r = await retrieve(em(), boundary(M), { query: 'Porto Braga Caroline', strategy: 'accuracy' }, { index });
    expect(r.ranked.find((c) => c.ref.id === claim)?.supports).toBeUndefined();
    expect(r.ranked.some((c) => c.ref.id === msg.id)).toBe(true);
  });
});

describe('freshness', () => {
  it('a new source is found at once, and a deleted one is gone at once', async () => {
    await index.warm(A);
    const before = await versions(A);
    const source = await ingest(A, '# Zanzibar log\n\nThe quixotic zanzibari ferryman logged every crossing.\n');
    expect((await versions(A)).records).toBeGreaterThan(before.records);
    const first = await retrieve(em(), boundary(A), { query: 'quixotic zanzibari ferryman', strategy: 'efficient' }, { index });
    expect(first.ranked[0]!.origin).toMatchObject({ sourceId: source });
    expect((await copyOf(A)).recordVersion).toBeGreaterThan(before.records);

    const deletion = randomUUID();
    await bound(em(), sql`insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, source_id)
      values (${deletion}, ${A}, 'source_deletion', 'queued', ${deletion}, ${deletion}, ${source})`);
    await deleteSourceRecords(em(), deletion);
    const gone = await retrieve(em(), boundary(A), { query: 'quixotic zanzibari ferryman', strategy: 'efficient' }, { index });
    expect(gone.ranked.filter((c) => c.origin.type === 'source' && c.origin.sourceId === source)).toEqual([]);
    expect((await copyOf(A)).search(EVERYTHING, await wordsOf('quixotic zanzibari'), { limit: 10, adjacency: false }).hits).toEqual([]);
  });

  it('memory changes move the version as they commit, and the copy follows: new, corrected, withdrawn, deleted', async () => {
    const C = (await createTestAccount(db.orm)).id;
    const peer = await mem.peer(C, 'odette');
    const session = await mem.session(C, 'talk');
    await mem.message(C, { peerId: peer, sessionId: session, content: 'I keep bees on the roof.' });
    const own = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    const found = async (q: string) => (await retrieve(em(), boundary(C), { query: q, strategy: 'efficient' }, { index: own })).ranked.map((c) => c.text);
    expect(await found('bees roof')).toEqual(['I keep bees on the roof.']);


    // Inside a transaction the version does not move; at commit it does.
    const v0 = (await versions(C)).memory;
    await db.orm.em.fork().transactional(async (tx) => {
      await bound(tx, sql`insert into memory_event (id, account_id, kind, status) values (${randomUUID()}, ${C}, 'add_messages', 'succeeded')`);
      expect((await versions(C)).memory).toBe(v0);
    });
    await mem.message(C, { peerId: peer, sessionId: session, content: 'My hives produced forty jars of honey.' });
    expect((await versions(C)).memory).toBeGreaterThan(v0);
    // First, and its neighbour in the conversation after it.
    expect(await found('honey jars')).toEqual(['My hives produced forty jars of honey.', 'I keep bees on the roof.']);

    const claim = await mem.claim(C, { peerId: peer, sessionId: session, content: 'odette keeps bees.' });
    expect(await found('odette keeps')).toContain('odette keeps bees.');
    await bound(em(), sql`update memory_claim set content = 'odette keeps wasps.', authority = 'correction_memory' where id = ${claim}`);
    expect(await found('odette wasps')).toContain('odette keeps wasps.');
    expect(await found('odette keeps')).not.toContain('odette keeps bees.');
    await bound(em(), sql`update memory_claim set state = 'withdrawn' where id = ${claim}`);
    expect(await found('odette wasps')).not.toContain('odette keeps wasps.');

    const copy = await copyOf(C, own);
    await bound(em(), sql`delete from memory_session where id = ${session}`);
    expect(await found('bees honey')).toEqual([]);
    const after = await copyOf(C, own);
    expect(after).not.toBe(copy); // a deletion starts the copy over
    expect(after.statistics().docs).toEqual([0, 0, 0]);
    expect((await fallbackStatistics(em(), C, ['bee'])).docs).toEqual([0, 0, 0]);
  });
});

describe('boundary', () => {
  it('keeps to selected sources, audiences, peers, sessions and agents, and to the account', async () => {
    const words = await wordsOf('harbour survey budget migration curlew terns');
    const copy = await copyOf(A);
    const selected = copy.search({ ...EVERYTHING, sourceIds: new Set([sources[1]!, sources[2]!]) }, words, { limit: 1000, adjacency: true }).hits;
    const owners = async (ids: string[]) =>
      new Set((await bound<{ s: string }>(em(), sql`select distinct source_id as s from record where id = any(${ids}::uuid[])`)).map((r) => r.s));
    expect(selected.length).toBeGreaterThan(0);
    expect(selected.every((h) => h.kind === 0)).toBe(true);
    for (const s of await owners(selected.map((h) => h.id))) expect([sources[1], sources[2]]).toContain(s);

    await bound(em(), sql`update source set audience = 'ops' where id = ${sources[3]}`);
    const ops = (await copyOf(A)).search({ ...EVERYTHING, memory: false, audiences: new Set(['ops']) }, words, { limit: 1000, adjacency: true }).hits;
    expect(ops.length).toBeGreaterThan(0);
    expect(await owners(ops.map((h) => h.id))).toEqual(new Set([sources[3]]));
    await bound(em(), sql`update source set audience = null where id = ${sources[3]}`);

    const c0 = set.conversations[0]!;
    const [p] = await bound<{ id: string }>(em(), sql`select id from memory_peer where account_id = ${A} and label = ${c0.peer}`);
    const people = await wordsOf(set.conversations.slice(0, 10).map((c) => c.messages.join(' ')).join(' '));
    const onePeer = copy.search({ ...EVERYTHING, records: false, peerIds: new Set([p!.id]) }, people, { limit: 1000, adjacency: true }).hits;
    expect(onePeer.length).toBeGreaterThan(0);
    const peersOf = new Set((await bound<{ p: string }>(em(), sql`select peer_id as p from memory_message where id = any(${onePeer.map((h) => h.id)}::uuid[])
      union select peer_id from memory_claim where id = any(${onePeer.map((h) => h.id)}::uuid[])`)).map((r) => r.p));
    expect(peersOf).toEqual(new Set([p!.id]));
    expect(copy.search({ ...EVERYTHING, agentId: 'nobody' }, people, { limit: 10, adjacency: true }).hits.every((h) => h.kind === 0)).toBe(true);

    const own = new Set((await bound<{ id: string }>(em(), sql`select id from record where account_id = ${B2}`)).map((r) => r.id));
    const b = (await copyOf(B2)).search(EVERYTHING, words, { limit: 1000, adjacency: true }).hits;
    expect(b.length).toBeGreaterThan(0);
    for (const h of b) expect(own.has(h.id)).toBe(true);
  });
});

describe('queries while the copy is being refreshed', () => {
  it('answer as a copy built afterwards does, while sources are added and removed underneath', async () => {
    const C = (await createTestAccount(db.orm)).id;
    const own = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    const added: string[] = [];
    for (const d of set.documents.slice(0, 10)) added.push(await ingest(C, d.text, d.filename));
    expect(await own.warm(C)).toBe(true);
    const questions = set.questions.slice(0, 12).map((q) => q.question);
    for (let round = 0; round < 3; round++) {
      // Change the account (one source in, one out), then query while the refresh runs.
      added.push(await ingest(C, set.documents[10 + round]!.text, set.documents[10 + round]!.filename));
      const gone = added.shift()!;
      await bound(em(), sql`update source set status = 'quarantined' where id = ${gone}`);
      const refresh = own.warm(C);
      const during = await Promise.all(questions.map((q) => retrieve(em(), boundary(C), { query: q, strategy: 'accuracy' }, { index: own })));
      await refresh;
      const fresh = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
      for (const [i, q] of questions.entries()) {
        const want = (await retrieve(em(), boundary(C), { query: q, strategy: 'accuracy' }, { index: fresh })).ranked.slice(0, 10).map((c) => c.ref.id);
        const after = await retrieve(em(), boundary(C), { query: q, strategy: 'accuracy' }, { index: own });
        expect(during[i]!.ranked.slice(0, 10).map((c) => c.ref.id)).toEqual(want);
        expect(after.ranked.slice(0, 10).map((c) => c.ref.id)).toEqual(want);
        for (const c of after.ranked) expect(c.origin).not.toMatchObject({ sourceId: gone });
      }
    }
  });
});

describe('fetching the ranked records', () => {
  it('reads each where the copy saw it, and one that moved since by its id', async () => {
    const D = (await createTestAccount(db.orm)).id;
    const own = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    for (const d of set.documents.slice(0, 8)) await ingest(D, d.text, d.filename);
    const question = set.questions[0]!.question;
    const top = (await copyOf(D, own)).search(EVERYTHING, await wordsOf(question), { limit: 120, adjacency: false }).hits;
    expect(top.length).toBeGreaterThan(20);
    const where = new Map((await bound<{ id: string; t: string }>(em(), sql`select id, ctid::text as t from record where id = any(${top.map((h) => h.id)}::uuid[])`))
      .map((r) => [r.id, `"${r.t}"`]));
    expect(top.map((h) => h.tid)).toEqual(top.map((h) => where.get(h.id)));

    const ids = async () => (await retrieve(em(), boundary(D), { query: question, strategy: 'efficient' }, { index: own })).ranked.map((c) => c.ref.id);
    const before = await ids();
    // New row versions elsewhere (as VACUUM FULL or CLUSTER would move them); the copy still holds the
    // old places at the same version, so every third record is not where it is looked for.
    const moved = top.filter((_, i) => i % 3 === 0).map((h) => h.id);
    await bound(em(), sql`update record set text = text where id = any(${moved}::uuid[])`);
    const after = new Map((await bound<{ id: string; t: string }>(em(), sql`select id, ctid::text as t from record where id = any(${moved}::uuid[])`))
      .map((r) => [r.id, `"${r.t}"`]));
    for (const id of moved) expect(after.get(id)).not.toBe(where.get(id));
    expect(await ids()).toEqual(before);
  });
});

describe('memory budget', () => {
  it('an account that does not fit is left to PostgreSQL', async () => {
    const small = createSearchIndex({ orm: db.orm, maxBytes: 10_000 });
    expect(await small.warm(A)).toBe(false);
    expect(await small.current(A, await versions(A), 1000)).toBeNull();
    expect(small.usage().bytes).toBe(0);
    const viaSmall = await retrieve(em(), boundary(A), { query: 'harbour survey budget', strategy: 'accuracy' }, { index: small });
    const plain = await retrieve(em(), boundary(A), { query: 'harbour survey budget', strategy: 'accuracy' });
    expect(viaSmall.ranked.length).toBeGreaterThan(0);
    expect(viaSmall.ranked.map((c) => c.ref.id)).toEqual(plain.ranked.map((c) => c.ref.id));
  });

  it('holds accounts within the budget, least recently used out first', async () => {
    const one = createSearchIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    await one.warm(B2);
    const sizeB = one.usage().bytes;
    await one.warm(A);
    const both = one.usage().bytes;
    const tight = createSearchIndex({ orm: db.orm, maxBytes: both - 1 });
    await tight.warm(B2);
    await tight.warm(A);
    expect(tight.usage()).toEqual({ accounts: 1, bytes: both - sizeB });
  });
});

describe('migration 0022', () => {
  it('goes down and up again, and up rebuilds the same statistics from what is stored', async () => {
    const run = async (step: 'up' | 'down') => {
      const m = new Migration0022SearchStatistics(null as never, null as never);
      m[step]();
      await db.orm.em.fork().transactional(async (tx) => {
        for (const q of m.getQueries()) await bound(tx, sql.raw(String(q).replace(/;\s*$/, '')));
      });
    };
    const lexemes = ['harbour', 'survey', 'live', 'bee'];
    const before = await fallbackStatistics(em(), A, lexemes);
    const vectors = () => bound<{ id: string; tsv: string }>(em(), sql`select id, tsv::text as tsv from memory_message where account_id = ${A} order by id`);
    const stored = await vectors();
    await run('down');
    expect((await bound<{ n: string }>(em(), sql`select count(*) as n from pg_proc where proname = 'cairn_tsv_length'`))[0]!.n).toBe('0');
    await run('up');
    const after = await fallbackStatistics(em(), A, lexemes);
    expect([after.docs, after.length, lexemes.map(after.df)]).toEqual([before.docs, before.length, lexemes.map(before.df)]);
    expect(await vectors()).toEqual(stored);
  });
});
