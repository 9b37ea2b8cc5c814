import type { EntityManager } from '@mikro-orm/postgresql';
import { NEIGHBOURS, type Statistics } from './bm25.ts';
import { bound, prepared, sql, type Sql } from '../../platform/db/sql.ts';
import type { Boundary } from './boundary.ts';
import { recordTermHit, type TermMatch } from './terms.queries.ts';
import { memoryVersion, recordVersion } from './search-index.queries.ts';

/**
 * What retrieval reads from PostgreSQL, each statement confined to the boundary (account, active
 * sources, available messages, current eligible claims, audiences, selectors): the rows of each table
 * by a match (candidateRows: the documents a ranking named, or when no in-memory index is current the
 * candidates by a cheap first stage, the most recent content, exact citations), the neighbours of
 * messages, near spellings and the account's statistics. Source records' first stage is ts_rank summed
 * from the impact index (terms.queries.ts) without reading the matching rows; messages and claims (smaller
 * tables) are ranked by ts_rank over their GIN index. What retrieval makes of the rows is in
 * candidates.ts.
 */

export type Match =
  | ({ type: 'fts'; tsquery: string } & TermMatch)
  | { type: 'recent' }
  | { type: 'ids'; ids: string[] }
  /**
   * Source records already ranked (account-index.ts): fetched, not searched, without their vectors.
   * `tids`: where each row was when the index loaded it (array literal elements), so each is read
   * straight from its heap page (a TID scan) instead of through the primary key.
   */
  | { type: 'scored'; ids: string[]; scores: number[]; tids?: string[] };

/** How a candidate was found. */
export type Via = Exclude<Match['type'], 'scored'>;

/** Score, extra from-items and predicate of a match on the table aliased `alias`. */
function matchSql(m: Match, alias: string): { from: Sql; score: Sql; where: Sql } {
  switch (m.type) {
    case 'fts':
      return { from: sql`, (select ${m.tsquery}::tsquery as tq) q`, score: sql.raw(`ts_rank(${alias}.tsv, q.tq, 1)`), where: sql.raw(`${alias}.tsv @@ q.tq`) };
    case 'recent':
      return { from: sql.empty, score: sql.raw('0'), where: sql.raw('true') };
    case 'ids':
    case 'scored':
      return { from: sql.empty, score: sql.raw('0'), where: sql`${sql.raw(alias)}.id = any(${m.ids}::uuid[])` };
  }
}

const and = (conditions: Sql[]) => sql.join(conditions, ' and ');

function build(m: Match, base: { select: string; from: string; alias: string; dateCol: string; where: Sql[] }, limit: number): Sql {
  const ms = matchSql(m, base.alias);
  const order = m.type === 'recent' || m.type === 'ids' ? `${base.dateCol} desc` : 'score desc';
  return sql`with hit as (
      select ${sql.raw(base.alias)}.id, ${ms.score} as score
        from ${sql.raw(base.from)}${ms.from}
       where ${and([...base.where, ms.where])}
       order by ${sql.raw(order)} limit ${limit})
    ${sql.raw(base.select)}`;
}

const RECORD_SELECT = `select r.id, r.kind, r.text, r.start_offset, r.end_offset, r.section_path, r.page, r.content_hash, r.tsv::text as tsv,
        s.id as source_id, s.title, s.url, s.filename, to_char(s.dated_at, 'YYYY-MM-DD') as dated_at, s.audience,
        coalesce(s.dated_at::timestamptz, s.created_at) as dated, hit.score
      from hit join record r on r.id = hit.id join source s on s.id = r.source_id`;

function recordSql(b: Boundary, m: Match, limit: number): Sql {
  // Every boundary condition of source records is a condition on their source.
  const sourceWhere = [sql.raw("s.status = 'active'")];
  if (b.audiences) sourceWhere.push(sql`s.audience = any(${b.audiences}::text[])`);
  // The selected sources on the scanned table's own column (r.source_id can use the record's index).
  const sourceCol = sql.raw(m.type === 'fts' ? 's.id' : 'r.source_id');
  if (b.sourceIds) sourceWhere.push(sql`${sourceCol} = any(${b.sourceIds}::uuid[])`);
  if (m.type === 'fts') return sql`${recordTermHit(b.accountId, m, sourceWhere, limit)} ${sql.raw(RECORD_SELECT)}`;
  if (m.type === 'scored') {
    // The boundary is applied again here: the in-memory ranking never decides what may be returned.
    // The ids and scores travel as array literals, built here in one join each.
    // By ctid, the id must match too: a row that moved is simply not found there (candidateRows
    // then asks for it by id).
    const ids = `{${m.ids.join(',')}}`;
    const scores = `{${m.scores.join(',')}}`;
    const [hit, join] = m.tids
      ? [sql`unnest(${ids}::uuid[], ${scores}::real[], ${`{${m.tids.join(',')}}`}::tid[]) h(id, score, tid)`, 'r.ctid = hit.tid and r.id = hit.id']
      : [sql`unnest(${ids}::uuid[], ${scores}::real[]) h(id, score)`, 'r.id = hit.id'];
    return sql`with hit as (select * from ${hit}) ${sql.raw(RECORD_SELECT.replace('r.tsv::text as tsv', 'null::text as tsv').replace('r.id = hit.id', join))}
        where r.account_id = ${b.accountId} and ${and(sourceWhere)}`;
  }
  return build(m, {
    alias: 'r', dateCol: 'r.created_at', where: [sql`r.account_id = ${b.accountId}`, ...sourceWhere],
    from: 'record r join source s on s.id = r.source_id', select: RECORD_SELECT,
  }, limit);
}

/**
 * Whether the message aliased `alias` is held for review: a claim derived from it awaits review
 * (pending_review) or was rejected (withdrawn while it still carried the screen's warning; accepting
 * one clears it). Its text may be instructions aimed at a model, so it is not context or evidence
 * unless asked for.
 */
export const heldSql = (alias: string) => `exists (select 1 from memory_claim hc where hc.message_id = ${alias}.id
    and (hc.state = 'pending_review' or (hc.state = 'withdrawn' and hc.warning is not null)))`;

/** The boundary's conditions on memory messages (`m`) or claims (`c`), joined with their peer `p`. */
export function memoryWhere(b: Boundary, alias: 'm' | 'c'): Sql[] {
  const a = sql.raw(alias);
  const where = [sql`${a}.account_id = ${b.accountId}`, sql.raw("p.workspace = 'default'")];
  if (alias === 'm') where.push(sql.raw('m.available'), ...(b.includeHeld ? [] : [sql.raw(`not ${heldSql('m')}`)]));
  else where.push(sql.raw("c.state = 'current'"), sql.raw("c.eligibility = 'eligible'"));
  if (b.audiences) where.push(sql`${a}.audience = any(${b.audiences}::text[])`);
  if (b.peerIds) where.push(sql`${a}.peer_id = any(${b.peerIds}::uuid[])`);
  if (b.sessionIds) where.push(sql`${a}.session_id = any(${b.sessionIds}::uuid[])`);
  if (b.agentId) where.push(sql`${a}.agent_id = ${b.agentId}`);
  return where;
}

function messageSql(b: Boundary, m: Match, limit: number): Sql {
  return build(m, {
    alias: 'm', dateCol: 'm.created_at', where: memoryWhere(b, 'm'),
    from: 'memory_message m join memory_peer p on p.id = m.peer_id',
    select: `select m.id, m.content as text, m.role, m.agent_id, m.audience, m.created_at, m.event_id, m.position, m.content_hash,
        m.tsv::text as tsv, p.label as peer, se.label as session, hit.score, m.session_id, ${heldSql('m')} as held
      from hit join memory_message m on m.id = hit.id join memory_peer p on p.id = m.peer_id
        join memory_session se on se.id = m.session_id`,
  }, limit);
}

function claimSql(b: Boundary, m: Match, limit: number): Sql {
  return build(m, {
    alias: 'c', dateCol: 'c.valid_from', where: memoryWhere(b, 'c'),
    from: 'memory_claim c join memory_peer p on p.id = c.peer_id',
    select: `select c.id, c.content as text, c.authority, c.state, c.valid_from, c.agent_id, c.audience, c.tsv::text as tsv,
        p.label as peer, se.label as session, hit.score, case when c.authority = 'correction_memory' then null else c.message_id end as link,
        c.span_start, c.span_end
      from hit join memory_claim c on c.id = hit.id join memory_peer p on p.id = c.peer_id
        left join memory_session se on se.id = c.session_id`,
  }, limit);
}

/** A row of any table's statement: the columns its select names. */
export type Row = Record<string, unknown> & { id: string; text: string; tsv: string | null; score: number | string };

export type Table = 'records' | 'messages' | 'claims';
const STATEMENT: Record<Table, (b: Boundary, m: Match, limit: number) => Sql> = { records: recordSql, messages: messageSql, claims: claimSql };

/**
 * The records of a by-ctid fetch that were not where the index saw them (moved by VACUUM FULL or
 * CLUSTER), by id. Rows the boundary excludes are missing too and stay so: nothing is found for them.
 */
async function movedRecords(em: EntityManager, b: Boundary, m: Extract<Match, { type: 'scored' }>, found: { rows: Row[]; limit: number }): Promise<Row[]> {
  const have = new Set(found.rows.map((r) => r.id));
  const limit = found.limit;
  const at = m.ids.flatMap((id, i) => (have.has(id) ? [] : [i]));
  // The same statement by id: the same vector form, the missing ids and their scores.
  const { tids: _, ...byId } = m;
  return prepared<Row>(em, recordSql(b, { ...byId, ids: at.map((i) => m.ids[i]!), scores: at.map((i) => m.scores[i]!) }, limit));
}

/** The best `limit` rows of one table matching `m` inside the boundary. */
export async function candidateRows(em: EntityManager, b: Boundary, m: Match, of: { limit: number; table: Table }): Promise<Row[]> {
  const { limit, table } = of;
  // The hot path's statements (documents a ranking named) take a few forms and are prepared; the
  // other statements are occasional.
  let rows = await (m.type === 'scored' || m.type === 'ids' ? prepared<Row> : bound<Row>)(em, STATEMENT[table](b, m, limit));
  if (m.type === 'scored' && m.tids && rows.length < m.ids.length) rows = rows.concat(await movedRecords(em, b, m, { rows, limit }));
  return rows;
}

/**
 * The ids of the messages within NEIGHBOURS turns of the given ones in their sessions (conversation
 * order: created_at, event, position), inside the boundary.
 */
export async function neighbourIds(em: EntityManager, b: Boundary, of: string[]): Promise<string[]> {
  const where = and(memoryWhere(b, 'm'));
  const side = (cmp: '<' | '>', dir: 'desc' | 'asc') => sql`(select m.id from memory_message m join memory_peer p on p.id = m.peer_id
       where m.session_id = x.session_id and (m.created_at, m.event_id, m.position) ${sql.raw(cmp)} (x.created_at, x.event_id, x.position)
         and ${where}
       order by m.created_at ${sql.raw(dir)}, m.event_id ${sql.raw(dir)}, m.position ${sql.raw(dir)} limit ${sql.raw(String(NEIGHBOURS))})`;
  const rows = await bound<{ id: string }>(em, sql`select distinct n.id from memory_message x
      cross join lateral (${side('<', 'desc')} union all ${side('>', 'asc')}) n
     where x.id = any(${of}::uuid[])`);
  return rows.map((r) => r.id);
}

// Without an in-memory index ---------------------------------------------------------------------

/** Near spellings looked up per word: enough for a name's spellings, few enough for one index probe each. */
const NEAR_WORDS = 5;

/**
 * Lexemes of the account spelt like each word (pg_trgm's word similarity at its default threshold),
 * with their similarity: words of its sources from its lexicon (record_lexicon, stemmed here as the
 * index stems them) and lexemes of messages whose text holds a near spelling (their trigram index).
 * They only correct the query; what is returned is always found by searching, inside the boundary.
 */
export async function nearSpellings(em: EntityManager, accountId: string, words: string[]): Promise<Map<string, { lexeme: string; similarity: number }[]>> {
  const near = sql.raw(String(NEAR_WORDS));
  const rows = await bound<{ word: string; lexeme: string; similarity: number }>(em, sql`
    select t.word, n.lexeme, max(n.sim)::float8 as similarity from unnest(${words}::text[]) t(word)
    cross join lateral (
      (select x.lexeme, word_similarity(t.word, l.word) as sim
         from (select l.word from record_lexicon l where l.account_id = ${accountId} and t.word <% l.word
                order by word_similarity(t.word, l.word) desc limit ${near}) l
         cross join lateral unnest(tsvector_to_array(to_tsvector('english', l.word))) x(lexeme))
      union all
      (select x.lexeme, similarity(t.word, x.lexeme)
         from (select m.tsv from memory_message m where m.account_id = ${accountId} and m.available and t.word <% m.content limit 20) m
         cross join lateral unnest(tsvector_to_array(m.tsv)) x(lexeme)
        where similarity(t.word, x.lexeme) >= 0.4
        order by 2 desc limit ${near})) n
    group by t.word, n.lexeme`);
  const out = new Map<string, { lexeme: string; similarity: number }[]>();
  for (const r of rows) out.set(r.word, [...(out.get(r.word) ?? []), { lexeme: r.lexeme, similarity: Number(r.similarity) }]);
  return out;
}

/**
 * The account's statistics as the in-memory index counts them (bm25.ts): searchable documents and their
 * lengths per kind (active sources' totals, memory_index_version's), and the document frequencies of
 * `lexemes`, in one statement.
 */
export async function fallbackStatistics(em: EntityManager, accountId: string, lexemes: string[]): Promise<Statistics> {
  const [row] = await bound<{ records: string; record_length: string; messages: string; message_length: string; claims: string; claim_length: string; df: Record<string, number> | null }>(em,
    sql`select coalesce(s.n, 0)::text as records, coalesce(s.len, 0)::text as record_length,
            coalesce(v.messages, 0)::text as messages, coalesce(v.message_length, 0)::text as message_length,
            coalesce(v.claims, 0)::text as claims, coalesce(v.claim_length, 0)::text as claim_length,
            (select json_object_agg(l.lex,
               coalesce((select sum(cardinality(t.record_ids)) from record_term t join source so on so.id = t.source_id and so.status = 'active'
                          where t.account_id = ${accountId} and t.lexeme = l.lex collate "C"), 0)
               + (select count(*) from memory_message m where m.account_id = ${accountId} and m.available and m.tsv @@ quote_literal(l.lex)::tsquery)
               + (select count(*) from memory_claim c where c.account_id = ${accountId} and c.state = 'current' and c.eligibility = 'eligible'
                     and c.tsv @@ quote_literal(l.lex)::tsquery))
               from unnest(${lexemes}::text[]) l(lex)) as df
       from (select sum(record_count) as n, sum(record_length) as len from source where account_id = ${accountId} and status = 'active') s
       left join memory_index_version v on v.account_id = ${accountId}`,
  );
  const df = row?.df ?? {};
  return {
    docs: [Number(row?.records ?? 0), Number(row?.messages ?? 0), Number(row?.claims ?? 0)],
    length: [Number(row?.record_length ?? 0), Number(row?.message_length ?? 0), Number(row?.claim_length ?? 0)],
    df: (l) => Number(df[l] ?? 0),
  };
}

/** The row of a query's analysis (its words, statistics and index versions): one named statement of its columns. */
/**
 * The select list of a query's analysis (retrieve.ts, Analysis): the account's index versions and the
 * lexemes of each word (`wl`, in the words' order).
 */
export function analysisColumns(accountId: string, words: string[]): Sql {
  return sql`${recordVersion(accountId)} as record_version, ${memoryVersion(accountId)} as memory_version,
            (select json_agg(tsvector_to_array(to_tsvector('english', w.word)) order by w.n)
               from unnest(${words}::text[]) with ordinality w(word, n)) as wl`;
}

export async function analysisRow(em: EntityManager, columns: Sql): Promise<Record<string, unknown>> {
  return (await prepared<Record<string, unknown>>(em, sql`select ${columns}`))[0] ?? {};
}
