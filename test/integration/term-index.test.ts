import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bound } from '../../shared/db/sql.ts';
import { deleteSourceRecords } from '../../shared/ingest/process.ts';
import type { Boundary } from '../../shared/retrieval/boundary.ts';
import { fetchCandidates, type Match } from '../../shared/retrieval/candidates.ts';
import type { Strategy } from '../../shared/retrieval/ranking.ts';
import { orQuery, queryWords, retrieve } from '../../shared/retrieval/retrieve.ts';
import { createTermIndex, INDEX_VERSION_SQL, type IndexTerm, type TermIndex } from '../../shared/retrieval/term-index.ts';
import { retrievalSet } from '../fixtures/query/retrieval-set.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { ingestMarkdown } from '../helpers/source-rows.ts';

// The in-memory copy of the impact index (shared/retrieval/term-index.ts): it ranks exactly as
// PostgreSQL does over record_term, it is used only at the account's current record_index_version,
// it never widens the boundary, and it keeps within its memory budget.

let db: TestDatabase;
let A: string;
let B: string;
let index: TermIndex;
const sources: string[] = [];
const set = retrievalSet();

const ingest = (accountId: string, text: string, filename?: string) => ingestMarkdown(db.orm, accountId, text, filename);

const boundary = (accountId: string, over: Partial<Boundary> = {}): Boundary => ({
  accountId, audiences: null, includeSources: true, includeMemory: false, sourceIds: null, peerIds: null, sessionIds: null, agentId: null, ...over,
});

const version = async (accountId: string) =>
  (await bound<{ v: string }>(db.orm.em.fork(), `select ${INDEX_VERSION_SQL} as v`, [accountId]))[0]!.v;

/** The index's terms for a query, as retrieve() builds them (each word's own lexemes). */
async function indexTerms(text: string, expand: boolean): Promise<{ m: Extract<Match, { type: 'fts' }>; terms: IndexTerm[] }> {
  const words = queryWords(text);
  const prefix = words.map((w) => expand && w.length >= 5 && !/\d/.test(w));
  const rows = await bound<{ l: string[] }>(db.orm.em.fork(),
    "select tsvector_to_array(to_tsvector('english', w)) as l from unnest(?::text[]) with ordinality x(w, n) order by n", [words]);
  return {
    m: { type: 'fts', tsquery: orQuery(words, expand), words, prefix },
    terms: rows.flatMap((r, i) => r.l.map((lexeme) => ({ lexeme, prefix: prefix[i]! }))),
  };
}

beforeAll(async () => {
  db = await createTestDatabase();
  A = (await createTestAccount(db.orm)).id;
  B = (await createTestAccount(db.orm)).id;
  index = createTermIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
  // Loaded in two steps, so the copy the tests compare was also extended incrementally (new records
  // and lexemes merged into the orders already built).
  for (const [i, d] of set.documents.entries()) {
    sources.push(await ingest(A, d.text, d.filename));
    if (i === 29) expect(await index.warm(A)).toBe(true);
  }
  await ingest(B, set.documents[0]!.text, set.documents[0]!.filename);
  expect(await index.warm(A)).toBe(true);
}, 120_000);

afterAll(async () => {
  await db?.drop();
});

describe('ranking', () => {
  const questions = set.questions.filter((_, i) => i % 3 === 0).map((q) => q.question);

  it('scores every match as PostgreSQL does over record_term, best first, ties by id', async () => {
    let compared = 0;
    for (const q of questions) {
      for (const expand of [false, true]) {
        const { m, terms } = await indexTerms(q, expand);
        const sql = await fetchCandidates(db.orm.em.fork(), boundary(A), m, 100_000);
        const mem = index.top(boundary(A), await version(A), terms, 100_000)!;
        expect(mem).not.toBeNull();
        expect(mem.ids.length).toBe(sql.length);
        const want = new Map(sql.map((c) => [c.ref.id, c.firstScore]));
        for (const [i, id] of mem.ids.entries()) expect(mem.scores[i]).toBeCloseTo(want.get(id)!, 6);
        // Best first, and equal scores in id order.
        for (let i = 1; i < mem.ids.length; i++) {
          expect(mem.scores[i - 1]! > mem.scores[i]! || (mem.scores[i - 1] === mem.scores[i] && mem.ids[i - 1]! < mem.ids[i]!)).toBe(true);
        }
        compared += mem.ids.length;
      }
    }
    expect(compared).toBeGreaterThan(500);
  });

  it('the best k are the first k of the whole order, ties at the cut broken by id', async () => {
    let tiedCuts = 0;
    for (const q of questions) {
      const { terms } = await indexTerms(q, true);
      const all = index.top(boundary(A), await version(A), terms, 100_000)!;
      for (const k of [1, 7, 30, 120]) {
        const some = index.top(boundary(A), await version(A), terms, k)!;
        expect(some.ids).toEqual(all.ids.slice(0, k));
        expect(some.scores).toEqual(all.scores.slice(0, k));
        expect(some.lengths).toEqual(all.lengths.slice(0, k));
        if (all.ids.length > k && all.scores[k - 1] === all.scores[k]) tiedCuts++;
      }
    }
    // Some cuts fall inside a run of equal scores, where only the ids decide.
    expect(tiedCuts).toBeGreaterThan(0);
  });

  it.each(['efficient', 'accuracy'] as Strategy[])('retrieve (%s) returns what it returns without the index', async (strategy) => {
    // Besides the labelled questions: hyphenated words (one lexeme for the whole, others per part) and
    // words no record holds, for the matched and unmatched terms a query reports.
    const extra = ['e-mail the harbour-station survey budget', 'zyxwv harbour terns', 'co-ordinated migration counts'];
    for (const q of [...questions, ...extra]) {
      const plain = await retrieve(db.orm.em.fork(), boundary(A), q, strategy);
      const fast = await retrieve(db.orm.em.fork(), boundary(A), q, strategy, { index });
      expect(fast.ranked.slice(0, 10).map((c) => c.ref.id)).toEqual(plain.ranked.slice(0, 10).map((c) => c.ref.id));
      // The same float4 scores, read as text (SQL) or held as floats: equal to within printing precision.
      for (const [i, c] of fast.ranked.slice(0, 10).entries()) expect(c.score).toBeCloseTo(plain.ranked[i]!.score, 6);
      expect(fast.candidates).toBe(plain.candidates);
      expect(fast.matchedTerms).toEqual(plain.matchedTerms);
      expect(fast.unmatchedTerms).toEqual(plain.unmatchedTerms);
    }
  });
});

describe('boundary and freshness', () => {
  it('keeps to selected sources and audiences, and to the account', async () => {
    const { terms } = await indexTerms('harbour survey budget migration curlew terns', true);
    const selected = index.top(boundary(A, { sourceIds: [sources[1]!, sources[2]!] }), await version(A), terms, 1000)!;
    const owners = async (ids: string[]) =>
      new Set((await bound<{ s: string }>(db.orm.em.fork(), 'select distinct source_id as s from record where id = any(?::uuid[])', [ids])).map((r) => r.s));
    for (const s of await owners(selected.ids)) expect([sources[1], sources[2]]).toContain(s);

    await bound(db.orm.em.fork(), "update source set audience = 'ops' where id = ?", [sources[3]]);
    // The version moved: the old copy is not used, and the query still finds what PostgreSQL finds.
    expect(index.top(boundary(A), await version(A), terms, 10)).toBeNull();
    expect(await index.warm(A)).toBe(true);
    const ops = index.top(boundary(A, { audiences: ['ops'] }), await version(A), terms, 1000)!;
    expect(ops.ids.length).toBeGreaterThan(0);
    expect(await owners(ops.ids)).toEqual(new Set([sources[3]]));
    await bound(db.orm.em.fork(), 'update source set audience = null where id = ?', [sources[3]]);

    expect(await index.warm(B)).toBe(true);
    const own = new Set((await bound<{ id: string }>(db.orm.em.fork(), 'select id from record where account_id = ?', [B])).map((r) => r.id));
    const b = index.top(boundary(B), await version(B), terms, 1000)!;
    expect(b.ids.length).toBeGreaterThan(0);
    for (const id of b.ids) expect(own.has(id)).toBe(true);
  });

  it('a new source is found at once, by PostgreSQL until the copy catches up, then by the copy', async () => {
    await index.warm(A);
    const before = await version(A);
    const source = await ingest(A, '# Zanzibar log\n\nThe quixotic zanzibari ferryman logged every crossing.\n');
    expect(await version(A)).not.toBe(before);
    const first = await retrieve(db.orm.em.fork(), boundary(A), 'quixotic zanzibari ferryman', 'efficient', { index });
    expect(first.ranked[0]!.origin).toMatchObject({ sourceId: source });
    expect(await index.warm(A)).toBe(true);
    const { terms } = await indexTerms('quixotic zanzibari ferryman', false);
    const top = index.top(boundary(A), await version(A), terms, 10)!;
    expect(top.ids.length).toBeGreaterThan(0);
    const again = await retrieve(db.orm.em.fork(), boundary(A), 'quixotic zanzibari ferryman', 'efficient', { index });
    expect(again.ranked.map((c) => c.ref.id)).toEqual(first.ranked.map((c) => c.ref.id));

    // Deleted: gone from answers at once (the old copy is not used, and the fetch checks the source).
    const deletion = randomUUID();
    await bound(db.orm.em.fork(), `insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, source_id)
      values (?, ?, 'source_deletion', 'queued', ?, ?, ?)`, [deletion, A, deletion, deletion, source]);
    await deleteSourceRecords(db.orm.em.fork(), deletion);
    const gone = await retrieve(db.orm.em.fork(), boundary(A), 'quixotic zanzibari ferryman', 'efficient', { index });
    expect(gone.ranked.filter((c) => c.origin.type === 'source' && c.origin.sourceId === source)).toEqual([]);
    expect(await index.warm(A)).toBe(true);
    expect(index.top(boundary(A), await version(A), terms, 10)!.ids).toEqual([]);
  });

  it('a source changed inside a transaction moves the version only when it commits', async () => {
    const v0 = await version(A);
    await db.orm.em.fork().transactional(async (tx) => {
      await bound(tx, "update source set audience = 'x' where id = ?", [sources[4]]);
      await bound(tx, 'update source set audience = null where id = ?', [sources[4]]);
      expect(await version(A)).toBe(v0);
    });
    expect(BigInt(await version(A))).toBeGreaterThan(BigInt(v0));
  });
});

describe('queries while the copy is being refreshed', () => {
  it('answer as PostgreSQL does while sources are added and removed underneath', async () => {
    const C = (await createTestAccount(db.orm)).id;
    const own = createTermIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    const added: string[] = [];
    for (const d of set.documents.slice(0, 10)) added.push(await ingest(C, d.text, d.filename));
    expect(await own.warm(C)).toBe(true);
    const questions = set.questions.slice(0, 12).map((q) => q.question);
    for (let round = 0; round < 3; round++) {
      // Change the account (one source in, one out), then query while the refresh runs.
      added.push(await ingest(C, set.documents[10 + round]!.text, set.documents[10 + round]!.filename));
      const gone = added.shift()!;
      await bound(db.orm.em.fork(), "update source set status = 'quarantined' where id = ?", [gone]);
      const refresh = own.warm(C);
      const during = await Promise.all(questions.map((q) => retrieve(db.orm.em.fork(), boundary(C), q, 'accuracy', { index: own })));
      await refresh;
      const after = await Promise.all(questions.map((q) => retrieve(db.orm.em.fork(), boundary(C), q, 'accuracy', { index: own })));
      for (const [i, q] of questions.entries()) {
        const plain = await retrieve(db.orm.em.fork(), boundary(C), q, 'accuracy');
        const ids = plain.ranked.slice(0, 10).map((c) => c.ref.id);
        expect(during[i]!.ranked.slice(0, 10).map((c) => c.ref.id)).toEqual(ids);
        expect(after[i]!.ranked.slice(0, 10).map((c) => c.ref.id)).toEqual(ids);
        for (const c of after[i]!.ranked) expect(c.origin).not.toMatchObject({ sourceId: gone });
      }
    }
  });
});

describe('fetching the ranked records', () => {
  it('reads each where the copy saw it, and one that moved since by its id', async () => {
    const D = (await createTestAccount(db.orm)).id;
    const own = createTermIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    for (const d of set.documents.slice(0, 8)) await ingest(D, d.text, d.filename);
    expect(await own.warm(D)).toBe(true);
    const question = set.questions[0]!.question;
    const { terms } = await indexTerms(question, true);
    const top = own.top(boundary(D), await version(D), terms, 120)!;
    expect(top.ids.length).toBeGreaterThan(20);
    const where = new Map((await bound<{ id: string; t: string }>(db.orm.em.fork(), 'select id, ctid::text as t from record where id = any(?::uuid[])', [top.ids]))
      .map((r) => [r.id, `"${r.t}"`]));
    expect(top.tids).toEqual(top.ids.map((id) => where.get(id)));

    const ids = async (opts: { index?: TermIndex }) => (await retrieve(db.orm.em.fork(), boundary(D), question, 'accuracy', opts)).ranked.map((c) => c.ref.id);
    const plain = await ids({});
    expect(await ids({ index: own })).toEqual(plain);
    // New row versions elsewhere (as VACUUM FULL or CLUSTER would move them); the copy still holds
    // the old places at the same version, so every third record is not where it is looked for.
    const moved = top.ids.filter((_, i) => i % 3 === 0);
    await bound(db.orm.em.fork(), 'update record set text = text where id = any(?::uuid[])', [moved]);
    expect(own.top(boundary(D), await version(D), terms, 120)!.tids).toEqual(top.tids);
    const after = new Map((await bound<{ id: string; t: string }>(db.orm.em.fork(), 'select id, ctid::text as t from record where id = any(?::uuid[])', [moved]))
      .map((r) => [r.id, `"${r.t}"`]));
    for (const id of moved) expect(after.get(id)).not.toBe(where.get(id));
    expect(await ids({ index: own })).toEqual(plain);
  });
});

describe('memory budget', () => {
  it('an account that does not fit is left to PostgreSQL, and answers stay the same', async () => {
    const small = createTermIndex({ orm: db.orm, maxBytes: 10_000 });
    expect(await small.warm(A)).toBe(false);
    const { terms } = await indexTerms('harbour survey', false);
    expect(small.top(boundary(A), await version(A), terms, 10)).toBeNull();
    expect(small.usage().bytes).toBe(0);
    const plain = await retrieve(db.orm.em.fork(), boundary(A), 'harbour survey budget', 'accuracy');
    const viaSmall = await retrieve(db.orm.em.fork(), boundary(A), 'harbour survey budget', 'accuracy', { index: small });
    expect(viaSmall.ranked.map((c) => c.ref.id)).toEqual(plain.ranked.map((c) => c.ref.id));
  });

  it('holds accounts within the budget, least recently used out first', async () => {
    const one = createTermIndex({ orm: db.orm, maxBytes: 64 * 1024 * 1024 });
    await one.warm(B);
    const sizeB = one.usage().bytes;
    await one.warm(A);
    const both = one.usage().bytes;
    const tight = createTermIndex({ orm: db.orm, maxBytes: both - 1 });
    await tight.warm(B);
    await tight.warm(A);
    expect(tight.usage()).toEqual({ accounts: 1, bytes: both - sizeB });
  });
});
