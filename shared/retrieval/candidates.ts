import { createHash } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EvidenceKind } from '../contracts/query.ts';
import { bound, prepared } from '../db/sql.ts';
import type { Boundary } from './boundary.ts';
import type { CitedRef } from './citations.ts';
import { recordTermHit, type TermMatch } from './terms.ts';
import { parseTsVector, type TsVector } from './text.ts';

/**
 * Candidate generation: one SQL statement per content table (source records, memory messages, memory
 * claims), each confined to the boundary (account, active sources, available messages, current eligible
 * claims, audiences, selectors). The first-stage score is PostgreSQL's ts_rank (or trigram word
 * similarity); ranking.ts re-scores the candidates. Every matching row is scored, so this score must
 * be cheap: ts_rank_cd (cover density) costs several times more per row and chose the same candidates
 * on the labelled set; proximity is scored later, on the candidates only. Source records, by far the
 * largest table, get their full-text ts_rank from the impact index (terms.ts) without reading the
 * matching rows; memory messages and claims (small tables) are ranked by ts_rank over the GIN index,
 * and for a query those two statements are columns of its first statement (memoryColumns).
 */

export type Match =
  | ({ type: 'fts'; tsquery: string } & TermMatch)
  | { type: 'trgm'; term: string }
  | { type: 'recent' }
  | { type: 'ids'; ids: string[] }
  /**
   * Source records already ranked by the in-memory impact index (term-index.ts): fetched, not searched.
   * Each record's vector comes as one of: `lexemes`, the query lexemes it holds (no positions or
   * length: ranking without positions); `keep` with `lengths`, the positions of those lexemes only,
   * filtered in PostgreSQL, and its length as the index holds it; neither, its whole tsvector.
   * `tids`: where each row was when the index loaded it (array literal elements), so each is read
   * straight from its heap page (a TID scan) instead of through the primary key.
   */
  | { type: 'scored'; ids: string[]; scores: number[]; tids?: string[]; lexemes?: string[][]; keep?: string[]; lengths?: number[] };

/** How a candidate was found. */
export type Via = Exclude<Match['type'], 'scored'>;

type SourceOrigin = {
  type: 'source'; sourceId: string; title: string | null; url: string | null; filename: string | null; datedAt: string | null;
  span: { start: number; end: number }; sectionPath: string[]; page: number | null; audience: string | null;
};
type MessageOrigin = {
  type: 'message'; peer: string; session: string; role: string; agentId: string | null; eventId: string; position: number;
  createdAt: string; audience: string | null;
};
type ClaimOrigin = {
  type: 'claim'; claimId: string; peer: string; session: string | null; authority: string; state: string; validFrom: string;
  agentId: string | null; audience: string | null;
};
export type Origin = SourceOrigin | MessageOrigin | ClaimOrigin;

export type Candidate = {
  ref: CitedRef;
  kind: EvidenceKind;
  text: string;
  contentHash: string;
  /** The row's tsvector (lexemes and positions), parsed once here for every later scoring step. */
  vector: TsVector;
  /** First-stage score: ts_rank, or word similarity for trigram matches. */
  firstScore: number;
  via: Via;
  /** When the content was dated (source date, message time, claim validity start). */
  date: Date;
  authority: string | null;
  origin: Origin;
};

type Sql = { text: string; params: unknown[] };

/** Score and predicate of a match, over the column `col` (text) and `tsv`. */
function matchSql(m: Match, alias: string, textCol: string, idCol = `${alias}.id`): { from: string; score: string; where: string; params: { from: unknown[]; where: unknown[] } } {
  switch (m.type) {
    case 'fts':
      return {
        from: `, to_tsquery('english', ?) tq`,
        score: `ts_rank(${alias}.tsv, tq, 1)`,
        where: `${alias}.tsv @@ tq`,
        params: { from: [m.tsquery], where: [] },
      };
    case 'trgm':
      return { from: '', score: `word_similarity(?, ${textCol})`, where: `? <% ${textCol}`, params: { from: [], where: [m.term] } };
    case 'recent':
      return { from: '', score: '0', where: 'true', params: { from: [], where: [] } };
    case 'ids':
    case 'scored':
      return { from: '', score: '0', where: `${idCol} = any(?::uuid[])`, params: { from: [], where: [m.ids] } };
  }
}

function build(
  m: Match,
  base: { select: string; from: string; alias: string; textCol: string; dateCol: string; where: string[]; params: unknown[] },
  limit: number,
): Sql {
  const ms = matchSql(m, base.alias, base.textCol);
  // trgm's score expression carries its own parameter, placed before the FROM parameters.
  const scoreParams = m.type === 'trgm' ? [m.term] : [];
  const order = m.type === 'recent' || m.type === 'ids' ? `${base.dateCol} desc` : 'score desc';
  const text = `with hit as (
      select ${base.alias}.id, ${ms.score} as score
        from ${base.from}${ms.from}
       where ${[...base.where, ms.where].join(' and ')}
       order by ${order} limit ?)
    ${base.select}`;
  return { text, params: [...scoreParams, ...ms.params.from, ...base.params, ...ms.params.where, limit] };
}

const RECORD_SELECT = `select r.id, r.kind, r.text, r.start_offset, r.end_offset, r.section_path, r.page, r.content_hash, r.tsv::text as tsv,
        s.id as source_id, s.title, s.url, s.filename, to_char(s.dated_at, 'YYYY-MM-DD') as dated_at, s.audience,
        coalesce(s.dated_at::timestamptz, s.created_at) as dated, hit.score
      from hit join record r on r.id = hit.id join source s on s.id = r.source_id`;

function recordSql(b: Boundary, m: Match, limit: number): Sql {
  // Every boundary condition of source records is a condition on their source.
  const sourceWhere = ["s.status = 'active'"];
  const params: unknown[] = [];
  if (b.audiences) { sourceWhere.push('s.audience = any(?::text[])'); params.push(b.audiences); }
  // The selected sources on the scanned table's own column (r.source_id can use the record's index).
  const sourceCol = m.type === 'fts' ? 's.id' : 'r.source_id';
  if (b.sourceIds) { sourceWhere.push(`${sourceCol} = any(?::uuid[])`); params.push(b.sourceIds); }
  if (m.type === 'fts') {
    const hit = recordTermHit(b.accountId, m, { where: sourceWhere, params }, limit);
    return { text: `${hit.text} ${RECORD_SELECT}`, params: hit.params };
  }
  if (m.type === 'scored') {
    // The boundary is applied again here: the in-memory ranking never decides what may be returned.
    // With the records' query lexemes known (the efficient preset ranks without positions), their
    // tsvectors are not sent. With `keep`, only those lexemes' positions are: setweight marks them
    // (records' vectors carry no weights) and ts_filter keeps the marked, a tenth of the text to send
    // and parse. The ids and scores travel as array literals, built here in one join each.
    const tsv = m.lexemes
      ? { sql: 'null::text as tsv', params: [] }
      : m.keep
        ? { sql: "ts_filter(setweight(r.tsv, 'A', ?::text[]), '{a}')::text as tsv", params: [m.keep] }
        : { sql: 'r.tsv::text as tsv', params: [] };
    // By ctid, the id must match too: a row that moved is simply not found there (fetchCandidates
    // then asks for it by id).
    const [hit, join, tids] = m.tids
      ? ['unnest(?::uuid[], ?::real[], ?::tid[]) h(id, score, tid)', 'r.ctid = hit.tid and r.id = hit.id', [`{${m.tids.join(',')}}`]]
      : ['unnest(?::uuid[], ?::real[]) h(id, score)', 'r.id = hit.id', []];
    return {
      text: `with hit as (select * from ${hit}) ${RECORD_SELECT.replace('r.tsv::text as tsv', tsv.sql).replace('r.id = hit.id', join)}
        where r.account_id = ? and ${sourceWhere.join(' and ')}`,
      params: [`{${m.ids.join(',')}}`, `{${m.scores.join(',')}}`, ...tids, ...tsv.params, b.accountId, ...params],
    };
  }
  const where = ['r.account_id = ?', ...sourceWhere];
  if (m.type === 'trgm') return nearWordSql(b.accountId, m.term, where, [b.accountId, ...params], RECORD_SELECT, limit);
  return build(m, {
    alias: 'r', textCol: 'r.text', dateCol: 'r.created_at', where, params: [b.accountId, ...params],
    from: 'record r join source s on s.id = r.source_id', select: RECORD_SELECT,
  }, limit);
}

/** Near words looked up per term: enough for a name's spellings, few enough for one index probe each. */
const NEAR_WORDS = 20;

/**
 * Near spellings in sources: the account's words within trigram word similarity of the term (the
 * lexicon of migration 0015 and its trigram index), then the excerpts holding one of them (the
 * full-text index), each scored by its best word's similarity. Excerpts hold every word of a source
 * once, while facts and links repeat words of the same text.
 */
function nearWordSql(accountId: string, term: string, where: string[], params: unknown[], select: string, limit: number): Sql {
  const text = `with near as (
      select word_similarity(?, l.word) as sim, to_tsquery('english', l.word) as q
        from record_lexicon l where l.account_id = ? and ? <% l.word order by sim desc limit ${NEAR_WORDS}),
    hit as (
      select r.id, max(near.sim) as score
        from near join record r on r.tsv @@ near.q join source s on s.id = r.source_id
       where ${[...where, "r.kind = 'excerpt'"].join(' and ')}
       group by r.id order by score desc limit ?)
    ${select}`;
  return { text, params: [term, accountId, term, ...params, limit] };
}

export function memoryWhere(b: Boundary, alias: 'm' | 'c'): { where: string[]; params: unknown[] } {
  const where = [`${alias}.account_id = ?`, "p.workspace = 'default'"];
  const params: unknown[] = [b.accountId];
  if (alias === 'm') where.push('m.available');
  else where.push("c.state = 'current'", "c.eligibility = 'eligible'");
  if (b.audiences) { where.push(`${alias}.audience = any(?::text[])`); params.push(b.audiences); }
  if (b.peerIds) { where.push(`${alias}.peer_id = any(?::uuid[])`); params.push(b.peerIds); }
  if (b.sessionIds) { where.push(`${alias}.session_id = any(?::uuid[])`); params.push(b.sessionIds); }
  if (b.agentId) { where.push(`${alias}.agent_id = ?`); params.push(b.agentId); }
  return { where, params };
}

function messageSql(b: Boundary, m: Match, limit: number): Sql {
  return build(m, {
    alias: 'm', textCol: 'm.content', dateCol: 'm.created_at', ...memoryWhere(b, 'm'),
    from: 'memory_message m join memory_peer p on p.id = m.peer_id',
    select: `select m.id, m.content as text, m.role, m.agent_id, m.audience, m.created_at, m.event_id, m.position, m.content_hash,
        m.tsv::text as tsv, p.label as peer, se.label as session, hit.score
      from hit join memory_message m on m.id = hit.id join memory_peer p on p.id = m.peer_id
        join memory_session se on se.id = m.session_id`,
  }, limit);
}

function claimSql(b: Boundary, m: Match, limit: number): Sql {
  return build(m, {
    alias: 'c', textCol: 'c.content', dateCol: 'c.valid_from', ...memoryWhere(b, 'c'),
    from: 'memory_claim c join memory_peer p on p.id = c.peer_id',
    select: `select c.id, c.content as text, c.authority, c.state, c.valid_from, c.agent_id, c.audience, c.tsv::text as tsv,
        p.label as peer, se.label as session, hit.score
      from hit join memory_claim c on c.id = hit.id join memory_peer p on p.id = c.peer_id
        left join memory_session se on se.id = c.session_id`,
  }, limit);
}

type Row = Record<string, unknown> & { id: string; text: string; tsv: string | null; score: number | string };
const iso = (d: unknown) => new Date(d as string).toISOString();
const normHash = (t: string) => createHash('sha256').update(t.normalize('NFC').replace(/\s+/g, ' ').trim()).digest('hex');

function toRecord(r: Row, via: Via, keep?: ReadonlySet<string>): Candidate {
  return {
    ref: { table: 'record', id: r.id }, kind: r.kind as EvidenceKind, text: r.text, contentHash: r.content_hash as string,
    vector: parseTsVector(r.tsv, keep), firstScore: Number(r.score), via, date: new Date(r.dated as string), authority: null,
    origin: {
      type: 'source', sourceId: r.source_id as string, title: (r.title as string) ?? null, url: (r.url as string) ?? null,
      filename: (r.filename as string) ?? null, datedAt: (r.dated_at as string) ?? null,
      span: { start: Number(r.start_offset), end: Number(r.end_offset) }, sectionPath: (r.section_path as string[]) ?? [],
      page: r.page === null || r.page === undefined ? null : Number(r.page), audience: (r.audience as string) ?? null,
    },
  };
}

function toMessage(r: Row, via: Via, keep?: ReadonlySet<string>): Candidate {
  return {
    ref: { table: 'message', id: r.id }, kind: 'message', text: r.text, contentHash: r.content_hash as string,
    vector: parseTsVector(r.tsv, keep), firstScore: Number(r.score), via, date: new Date(r.created_at as string), authority: null,
    origin: {
      type: 'message', peer: r.peer as string, session: r.session as string, role: r.role as string,
      agentId: (r.agent_id as string) ?? null, eventId: r.event_id as string, position: Number(r.position),
      createdAt: iso(r.created_at), audience: (r.audience as string) ?? null,
    },
  };
}

function toClaim(r: Row, via: Via, keep?: ReadonlySet<string>): Candidate {
  return {
    ref: { table: 'claim', id: r.id }, kind: 'claim', text: r.text, contentHash: normHash(r.text),
    vector: parseTsVector(r.tsv, keep), firstScore: Number(r.score), via, date: new Date(r.valid_from as string), authority: r.authority as string,
    origin: {
      type: 'claim', claimId: r.id, peer: r.peer as string, session: (r.session as string) ?? null, authority: r.authority as string,
      state: r.state as string, validFrom: iso(r.valid_from), agentId: (r.agent_id as string) ?? null, audience: (r.audience as string) ?? null,
    },
  };
}

export type Tables = { records: boolean; messages: boolean; claims: boolean };

/**
 * Completes the vectors of records ranked in memory from what the index knows: the query lexemes each
 * holds, without positions or length (what ranking without positions, the efficient preset, and the
 * matched-terms report use), or the length of a vector fetched with the query's lexemes only.
 */
function completeVectors(m: Extract<Match, { type: 'scored' }>, cands: Candidate[], keep?: ReadonlySet<string>): void {
  if (!m.lexemes && !m.lengths) return;
  const at = new Map(m.ids.map((id, i) => [id, i]));
  for (const c of cands) {
    const i = at.get(c.ref.id)!;
    if (m.lexemes) c.vector = { positions: new Map(m.lexemes[i]!.filter((l) => !keep || keep.has(l)).map((l) => [l, []])), length: 0 };
    else c.vector.length = m.lengths![i]!;
  }
}

/**
 * The records of a by-ctid fetch that were not where the index saw them (moved by VACUUM FULL or
 * CLUSTER), by id. Rows the boundary excludes are missing too and stay so: nothing is found for them.
 */
async function movedRecords(em: EntityManager, b: Boundary, m: Extract<Match, { type: 'scored' }>, found: Row[], limit: number): Promise<Row[]> {
  const have = new Set(found.map((r) => r.id));
  const at = m.ids.flatMap((id, i) => (have.has(id) ? [] : [i]));
  // The same statement by id: the same vector form (lexemes, keep), the missing ids and their scores.
  const { tids: _, ...byId } = m;
  const sql = recordSql(b, { ...byId, ids: at.map((i) => m.ids[i]!), scores: at.map((i) => m.scores[i]!) }, limit);
  return prepared<Row>(em, sql.text, sql.params);
}

/**
 * Candidates from every table the boundary includes, fetched concurrently. `keep`: the lexemes whose
 * positions the vectors need (the query's; ranking looks at no others), all when omitted.
 */
export async function fetchCandidates(
  em: EntityManager, b: Boundary, m: Match, limit: number, tables?: Partial<Tables>, keep?: Promise<ReadonlySet<string>>,
): Promise<Candidate[]> {
  const want: Tables = { records: b.includeSources, messages: b.includeMemory, claims: b.includeMemory, ...tables };
  const jobs: Promise<Candidate[]>[] = [];
  // Records ranked in memory were found by full text, as the SQL path finds them.
  const via: Via = m.type === 'scored' ? 'fts' : m.type;
  // The hot path's statement here (records ranked in memory) takes a few forms and is prepared; the
  // memory tables' full-text candidates ride on the query's first statement (memoryColumns), and the
  // other statements are occasional.
  const run = (sql: Sql, map: (r: Row, via: Via, keep?: ReadonlySet<string>) => Candidate) =>
    (m.type === 'scored' ? prepared<Row> : bound<Row>)(em, sql.text, sql.params).then(async (rows) => {
      if (m.type === 'scored' && m.tids && rows.length < m.ids.length) rows = rows.concat(await movedRecords(em, b, m, rows, limit));
      const k = await keep;
      const out = rows.map((r) => map(r, via, k));
      if (m.type === 'scored') completeVectors(m, out, k);
      return out;
    });
  if (want.records && b.includeSources) jobs.push(run(recordSql(b, m, limit), toRecord));
  if (want.messages && b.includeMemory) jobs.push(run(messageSql(b, m, limit), toMessage));
  if (want.claims && b.includeMemory) jobs.push(run(claimSql(b, m, limit), toClaim));
  return (await Promise.all(jobs)).flat();
}

/**
 * The memory tables' full-text candidates as json columns (`memory_messages`, `memory_claims`) to add
 * to another statement's select list, so the query's first statement also brings them: one round trip
 * and one pooled connection instead of three. `read` maps the statement's row as fetchCandidates maps
 * its own rows (json keeps the column names; timestamps arrive as ISO strings).
 */
export function memoryColumns(b: Boundary, m: Extract<Match, { type: 'fts' }>, limit: number): {
  columns: string; params: unknown[]; read: (row: Record<string, unknown>, keep?: ReadonlySet<string>) => Candidate[];
} {
  if (!b.includeMemory) return { columns: 'null::json as memory_messages, null::json as memory_claims', params: [], read: () => [] };
  const msg = messageSql(b, m, limit);
  const claim = claimSql(b, m, limit);
  const agg = (sql: Sql, name: string) => `(select coalesce(json_agg(x), '[]'::json) from (${sql.text}) x) as ${name}`;
  return {
    columns: `${agg(msg, 'memory_messages')}, ${agg(claim, 'memory_claims')}`,
    params: [...msg.params, ...claim.params],
    read: (row, keep) => [
      ...((row.memory_messages as Row[] | null) ?? []).map((r) => toMessage(r, 'fts', keep)),
      ...((row.memory_claims as Row[] | null) ?? []).map((r) => toClaim(r, 'fts', keep)),
    ],
  };
}

/** The one candidate a citation names, if it is still inside the boundary. */
export async function fetchCited(em: EntityManager, b: Boundary, ref: CitedRef): Promise<Candidate | null> {
  const m: Match = { type: 'ids', ids: [ref.id] };
  const tables: Tables = { records: ref.table === 'record', messages: ref.table === 'message', claims: ref.table === 'claim' };
  const [found] = await fetchCandidates(em, b, m, 1, tables);
  return found ?? null;
}
