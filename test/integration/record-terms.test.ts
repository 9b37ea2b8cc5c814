import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Migration0014RecordTerms } from '../../platform/db/migrations/0014-record-terms.ts';
import { Migration0021RecordForeignKeys } from '../../platform/db/migrations/0021-record-foreign-keys.ts';
import { bound, sql, type Sql } from '../../platform/db/sql.ts';
import { deleteSourceRecords } from '../../core/ingest/build/build.ts';
import type { Boundary } from '../../core/retrieval/boundary.ts';
import { fetchCandidates } from '../../core/retrieval/candidates.ts';
import type { Match } from '../../core/retrieval/candidates.queries.ts';
import { queryWords } from '../../core/retrieval/retrieve.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { ingestMarkdown } from '../helpers/source-rows.ts';

// The impact index of source records (record_term): the first stage ranks records by
// it exactly as ts_rank over their tsvectors would, within the boundary, and it follows the records
// through ingest, source deletion and account deletion.

let db: TestDatabase;
let A: string;
let B: string;
const sources: string[] = [];

const DOCS = [
  '# Harbour survey\n\nThe harbour survey team counted terns and gulls on the island each morning. Terns nest on the shingle; ' +
    'gulls nest on the cliffs.\n\nThe survey budget for the harbour station was twelve thousand euros.\n',
  '# Migration notes\n\nCurlews migrate south in autumn along the coast. The migration route follows the river valley, ' +
    'and curlew counts peak in October.\n\nSurveyors record migrating curlews, terns and plovers at dawn.\n',
  '# Board minutes\n\nThe board reviewed the annual budget. The survey grant was renewed; the harbour station budget was cut. ' +
    'Surveys of the island continue every spring.\n',
];

const ingest = (accountId: string, text: string, filename?: string) => ingestMarkdown(db.orm, accountId, text, filename);

const boundary = (accountId: string, over: Partial<Boundary> = {}): Boundary => ({
  accountId, audiences: null, includeSources: true, includeMemory: false, sourceIds: null, peerIds: null, sessionIds: null, agentId: null, ...over,
});

/** The first stage's match for a text; `tsquery`: the same OR query for to_tsquery('english', …), to compare with. */
function fts(text: string, expand: boolean): Match {
  const words = queryWords(text);
  const prefix = words.map((w) => expand && w.length >= 5);
  return { type: 'fts', tsquery: words.map((w, i) => (prefix[i] ? `${w}:*` : w)).join(' | '), words, prefix };
}

const termRows = async (where: Sql) =>
  Number((await bound<{ n: string }>(db.orm.em.fork(), sql`select count(*) as n from record_term where ${where}`))[0]!.n);

beforeAll(async () => {
  db = await createTestDatabase();
  A = (await createTestAccount(db.orm)).id;
  B = (await createTestAccount(db.orm)).id;
  for (const d of DOCS) sources.push(await ingest(A, d));
  await ingest(B, DOCS[0]!);
}, 60_000);

afterAll(async () => {
  await db?.drop();
});

describe('first stage over the impact index', () => {
  it.each([
    ['harbour survey budget', false],
    ['where do terns and curlews nest', false],
    ['surveys in the harbour', true],
  ])('ranks the records matching "%s" (prefix %s) by ts_rank, every match, nothing else', async (text, expand) => {
    const m = fts(text, expand);
    const got = await fetchCandidates(db.orm.em.fork(), boundary(A), m, { limit: 1000 });
    const want = await bound<{ id: string; score: number }>(db.orm.em.fork(),
      sql`select r.id, ts_rank(r.tsv, to_tsquery('english', ${(m as { tsquery: string }).tsquery}), 1) as score from record r
        where r.account_id = ${A} and r.tsv @@ to_tsquery('english', ${(m as { tsquery: string }).tsquery})`);
    expect(want.length).toBeGreaterThanOrEqual(2);
    expect(new Set(got.map((c) => c.ref.id))).toEqual(new Set(want.map((w) => w.id)));
    const score = new Map(want.map((w) => [w.id, Number(w.score)]));
    for (const c of got) expect(c.firstScore).toBeCloseTo(score.get(c.ref.id)!, 5);
    // Best first, and the limit keeps the best.
    const best = [...want].sort((a, b) => b.score - a.score)[0]!;
    const [top] = await fetchCandidates(db.orm.em.fork(), boundary(A), m, { limit: 1 });
    expect(top!.firstScore).toBeCloseTo(best.score, 5);
  });

  it('keeps to the boundary: the account, active sources, selected sources and audiences', async () => {
    const m = fts('harbour survey budget curlew migration', false);
    const all = await fetchCandidates(db.orm.em.fork(), boundary(A), m, { limit: 1000 });
    const own = new Set((await bound<{ id: string }>(db.orm.em.fork(), sql`select id from record where account_id = ${A}`)).map((r) => r.id));
    for (const c of all) expect(own.has(c.ref.id)).toBe(true);
    const selected = await fetchCandidates(db.orm.em.fork(), boundary(A, { sourceIds: [sources[1]!] }), m, { limit: 1000 });
    expect(selected.length).toBeGreaterThan(0);
    for (const c of selected) expect(c.origin).toMatchObject({ type: 'source', sourceId: sources[1] });
    await bound(db.orm.em.fork(), sql`update source set audience = 'ops' where id = ${sources[0]}`);
    const ops = await fetchCandidates(db.orm.em.fork(), boundary(A, { audiences: ['ops'] }), m, { limit: 1000 });
    expect(ops.length).toBeGreaterThan(0);
    for (const c of ops) expect(c.origin).toMatchObject({ sourceId: sources[0], audience: 'ops' });
    await bound(db.orm.em.fork(), sql`update source set status = 'quarantined' where id = ${sources[0]}`);
    const active = await fetchCandidates(db.orm.em.fork(), boundary(A), m, { limit: 1000 });
    expect(active.length).toBeGreaterThan(0);
    for (const c of active) expect(c.origin).not.toMatchObject({ sourceId: sources[0] });
    await bound(db.orm.em.fork(), sql`update source set status = 'active', audience = null where id = ${sources[0]}`);
  });
});

describe('impact rows follow the records', () => {
  it('the migration builds the same rows from stored records as ingest writes', async () => {
    const snapshot = sql`select t.account_id, t.source_id, t.lexeme, e.id, e.impact from record_term t, unnest(t.record_ids, t.impacts) e(id, impact)
      order by 1, 2, 3, 4`;
    const before = await bound(db.orm.em.fork(), snapshot);
    const migration = new Migration0014RecordTerms(null as never, null as never);
    migration.up();
    const backfill = migration.getQueries().map((q) => String(q)).find((q) => q.trim().startsWith('insert into record_term'))!;
    await db.orm.em.fork().transactional(async (tx) => {
      await bound(tx, sql`delete from record_term`);
      await bound(tx, sql.raw(backfill.replace(/;\s*$/, '')));
    });
    expect(await bound(db.orm.em.fork(), snapshot)).toEqual(before);
  });

  it('source deletion removes a source\'s rows; account deletion removes the rest', async () => {
    const source = await ingest(A, '# Xylophonist log\n\nThe xylophonist counted chicks on the northern spit.\n');
    expect(await termRows(sql`source_id = ${source}`)).toBeGreaterThan(0);
    const deletion = randomUUID();
    await bound(db.orm.em.fork(), sql`insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, source_id)
      values (${deletion}, ${A}, 'source_deletion', 'queued', ${deletion}, ${deletion}, ${source})`);
    await deleteSourceRecords(db.orm.em.fork(), deletion);
    expect(await termRows(sql`source_id = ${source}`)).toBe(0);
    expect(await fetchCandidates(db.orm.em.fork(), boundary(A), fts('xylophonist', false), { limit: 10 })).toEqual([]);
    expect(await termRows(sql`account_id = ${B}`)).toBeGreaterThan(0);
    // The account's deletion cascades through ingest_job and source; record_term rows go by the source's
    // statement trigger (platform/db/triggers/source_delete_terms.sql: no foreign key of their own).
    await bound(db.orm.em.fork(), sql`delete from account where id = ${B}`);
    expect(await termRows(sql`account_id = ${B}`)).toBe(0);
    expect(await bound(db.orm.em.fork(), sql`select id from record where account_id = ${B}`)).toEqual([]);
  });

  it('a source deleted by any statement takes its rows, and only its rows, with it', async () => {
    const gone = await ingest(A, '# Quillwort survey\n\nQuillwort grows in the shallow lake margins.\n');
    const kept = await termRows(sql`source_id <> ${gone}`);
    expect(await termRows(sql`source_id = ${gone}`)).toBeGreaterThan(0);
    await bound(db.orm.em.fork(), sql`delete from ingest_job where id = ${gone}`);
    expect(await termRows(sql`source_id = ${gone}`)).toBe(0);
    expect(await bound(db.orm.em.fork(), sql`select id from record where source_id = ${gone}`)).toEqual([]);
    expect(await termRows(sql`source_id <> ${gone}`)).toBe(kept);
  });

  it('a record belongs to its source\'s account: one that names another account is refused', async () => {
    const [record] = await bound<Record<string, unknown>>(db.orm.em.fork(), sql`select * from record where source_id = ${sources[0]} limit 1`);
    const other = (await createTestAccount(db.orm)).id;
    await expect(bound(db.orm.em.fork(), sql`insert into record (id, account_id, source_id, kind, text, start_offset, end_offset, content_hash)
      values (${randomUUID()}, ${other}, ${record!.source_id}, 'excerpt', 'x', 0, 1, 'h')`)).rejects.toMatchObject({ code: '23503' });
  });

  it('migration 0021 goes down and up again', async () => {
    const run = async (step: 'up' | 'down') => {
      const m = new Migration0021RecordForeignKeys(null as never, null as never);
      m[step]();
      await db.orm.em.fork().transactional(async (tx) => {
        for (const q of m.getQueries()) await bound(tx, sql.raw(String(q).replace(/;\s*$/, '')));
      });
    };
    const constraints = () => bound<{ conname: string }>(db.orm.em.fork(),
      sql`select conname from pg_constraint where conrelid in ('record'::regclass, 'record_term'::regclass, 'source'::regclass) and contype in ('f', 'u') order by 1`);
    const now = await constraints();
    await run('down');
    expect((await constraints()).map((c) => c.conname)).toEqual(expect.arrayContaining(['record_account_id_fkey', 'record_source_id_fkey', 'record_term_source_id_fkey']));
    await run('up');
    expect(await constraints()).toEqual(now);
  });
});
