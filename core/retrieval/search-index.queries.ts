import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql, type Sql } from '../../platform/db/sql.ts';
import { fromBytes } from './embeddings.ts';
import { RECORD_LENGTH } from './terms.queries.ts';

// The statements that load the API's in-memory search index copies; search-index.ts decides when.

/** The account's record and memory versions, as text. */
export const recordVersion = (accountId: string): Sql => sql`coalesce((select version from record_index_version where account_id = ${accountId}), 0)::text`;
export const memoryVersion = (accountId: string): Sql => sql`coalesce((select version from memory_index_version where account_id = ${accountId}), 0)::text`;

/** Rows per fetch while loading: parsing one page is a stretch of the API's event loop. */
const LOAD_PAGE = 500;

/** Separates lexemes in one string per document (PostgreSQL's parser never puts a control character in a lexeme). */
const SEP = '\u001f';
/** A document's lexemes and frequencies as two strings: splitting is native, parsing arrays in JavaScript was most of a load. */
const TERMS = (tsv: string) => sql.raw(`cross join lateral (select string_agg(u.lexeme, chr(31)) as lexemes,
      string_agg(coalesce(array_length(u.positions, 1), 1)::text, ',') as tfs from unnest(${tsv}) u) t`);

type Terms = { lexemes: string | null; tfs: string | null; len: number };
/** A row's lexemes, their frequencies and the document's length, as the index takes them. */
export const terms = (r: Terms) => ({ lexemes: r.lexemes ? r.lexemes.split(SEP) : [], tfs: r.tfs ? r.tfs.split(',').map(Number) : [], length: Number(r.len) });

/** A row's vector when it was made by the model queries are embedded with. */
const VECTOR = (alias: string, model: string | null) =>
  sql`case when ${sql.raw(alias)}.embedding_model = ${model} then ${sql.raw(alias)}.embedding end as vector`;
export const vectorOf = (r: { vector: Buffer | null }) => (r.vector ? { vector: fromBytes(r.vector) } : {});

/** Rows of a cursor, a page at a time, inside the caller's transaction. */
async function* cursor<T>(tx: EntityManager, name: string, select: Sql): AsyncGenerator<T[]> {
  const cursorName = sql.raw(name);
  await bound(tx, sql`declare ${cursorName} no scroll cursor for ${select}`);
  for (;;) {
    const rows = await bound<T>(tx, sql`fetch forward ${sql.raw(String(LOAD_PAGE))} from ${cursorName}`);
    if (rows.length) yield rows;
    if (rows.length < LOAD_PAGE) break;
  }
  await bound(tx, sql`close ${cursorName}`);
}

/**
 * The account's versions, as text, and the estimated bytes of its memory in an index (`postingBytes`
 * per posting, `docBytes` per document).
 */
export async function indexVersions(em: EntityManager, accountId: string, bytes: { postingBytes: number; docBytes: number }) {
  const [v] = await bound<{ records: string; memory: string; estimate: string }>(em,
    sql`select ${recordVersion(accountId)} as records, ${memoryVersion(accountId)} as memory,
            coalesce((select (message_length + claim_length) * ${sql.raw(String(bytes.postingBytes))} + (messages + claims) * ${sql.raw(String(bytes.docBytes))}
                        from memory_index_version where account_id = ${accountId}), 0)::text as estimate`);
  return v!;
}

export function activeSources(em: EntityManager, accountId: string) {
  return bound<{ id: string; audience: string | null }>(em,
    sql`select id, audience from source where account_id = ${accountId} and status = 'active'`);
}

/** The postings and records of the sources, as text. */
export async function sourcesSize(em: EntityManager, sourceIds: string[]) {
  const [size] = await bound<{ postings: string; records: string }>(em,
    sql`select coalesce(sum(length(tsv)), 0)::bigint as postings, count(*) as records from record where source_id = any(${sourceIds}::uuid[])`);
  return size!;
}

/** The sources' records, a page at a time. */
export function recordPages(tx: EntityManager, sourceIds: string[], model: string | null) {
  type Row = Terms & { id: string; source_id: string; tid: string; vector: Buffer | null };
  return cursor<Row>(tx, 'cairn_index_records', sql`select r.id, r.source_id, r.ctid::text as tid, l.len, t.lexemes, t.tfs, ${VECTOR('r', model)}
      from record r ${sql.raw(RECORD_LENGTH)} ${TERMS('r.tsv')} where r.source_id = any(${sourceIds}::uuid[])`);
}

export async function memoryIndexVersion(tx: EntityManager, accountId: string) {
  const [v] = await bound<{ version: string; reset_at: string }>(tx,
    sql`select version, reset_at from memory_index_version where account_id = ${accountId}`);
  return v;
}

/** [account id, after version, up to version]: what memory was stamped in that range. */
type Stamped = [accountId: string, after: number, upTo: number];

/** The available messages of the add-events stamped in the range, a page at a time. */
export function messagePages(tx: EntityManager, range: Stamped, model: string | null) {
  type Message = Terms & {
    id: string; session_id: string; peer_id: string; audience: string | null; agent_id: string | null; at: number; event_id: string; position: number;
    vector: Buffer | null;
  };
  return cursor<Message>(tx, 'cairn_index_messages', sql`select m.id, m.session_id, m.peer_id, m.audience, m.agent_id,
      extract(epoch from m.created_at)::float8 * 1000 as at, m.event_id, m.position, cairn_tsv_length(m.tsv) as len, t.lexemes, t.tfs,
      ${VECTOR('m', model)}
      from memory_event e join memory_message m on m.event_id = e.id ${TERMS('m.tsv')}
     where e.account_id = ${range[0]} and e.indexed_at > ${range[1]} and e.indexed_at <= ${range[2]} and m.available`);
}

/** The claims stamped in the range (live: current and eligible), a page at a time. */
export function claimPages(tx: EntityManager, range: Stamped) {
  type Claim = Terms & { id: string; live: boolean; session_id: string | null; peer_id: string; audience: string | null; agent_id: string | null; message_id: string | null };
  return cursor<Claim>(tx, 'cairn_index_claims', sql`select c.id, c.state = 'current' and c.eligibility = 'eligible' as live,
      c.session_id, c.peer_id, c.audience, c.agent_id,
      case when c.authority = 'correction_memory' then null else c.message_id end as message_id, cairn_tsv_length(c.tsv) as len, t.lexemes, t.tfs
      from memory_claim c ${TERMS('c.tsv')}
     where c.account_id = ${range[0]} and c.indexed_at > ${range[1]} and c.indexed_at <= ${range[2]}`);
}
