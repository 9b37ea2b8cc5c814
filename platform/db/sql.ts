import type { EntityManager, PostgreSqlConnection } from '@mikro-orm/postgresql';
import { CompiledQuery } from 'kysely';
import { sha256Hex } from '../hash.ts';

// Every SQL statement of the product goes through this file (docs/decisions/0002-data-access.md):
// `bound` (real bind parameters, inside the EntityManager's transaction when it has one), `changed`, or
// `prepared` (a named prepared statement for hot texts). A statement is a `Sql` made by the `sql` tag,
// which keeps each value beside its placeholder; conditional parts are `Sql` fragments (or `sql.empty`).
// The statements live in platform/db and the `*.queries.ts` modules (eslint.config.js keeps them there).

/**
 * A piece of SQL with its parameters in order. Made by the `sql` tag: a value interpolated into the
 * template becomes a `?` placeholder and a parameter, a `Sql` interpolated is spliced in with its own
 * parameters, so a statement assembled from parts cannot get its parameters out of order.
 */
export class Sql {
  readonly text: string;
  readonly params: unknown[];
  constructor(text: string, params: unknown[]) {
    this.text = text;
    this.params = params;
  }
}

export function sql(strings: TemplateStringsArray, ...values: unknown[]): Sql {
  let text = strings[0]!;
  const params: unknown[] = [];
  values.forEach((v, i) => {
    if (v instanceof Sql) {
      text += v.text;
      params.push(...v.params);
    } else {
      text += '?';
      params.push(v);
    }
    text += strings[i + 1]!;
  });
  return new Sql(text, params);
}

/** SQL text built from code (a column list, an identifier), never from input. */
sql.raw = (text: string): Sql => new Sql(text, []);
/** Parts (values become placeholders) joined by `separator`. */
sql.join = (parts: readonly unknown[], separator = ', '): Sql =>
  parts.reduce<Sql>((acc, p, i) => (i === 0 ? sql`${p}` : sql`${acc}${sql.raw(separator)}${p}`), sql.raw(''));
sql.empty = new Sql('', []);


/**
 * Runs SQL with real bind parameters ($1, $2, ...) on the EntityManager's connection, inside its
 * transaction when it has one. MikroORM's `execute` formats parameters into the SQL text, which for
 * large values (a 50 MB upload, a document's text, a batch of records) costs many times their size in
 * memory and seconds of escaping; every statement goes through here instead. The tag's `?` placeholders
 * are numbered in order, so the SQL must not contain a literal `?`.
 */
export async function bound<T = Record<string, unknown>>(em: EntityManager, statement: Sql): Promise<T[]> {
  return (await run(em, statement)).rows as T[];
}

/** `bound` for an insert, update or delete without `returning`: how many rows it changed. */
export async function changed(em: EntityManager, statement: Sql): Promise<number> {
  return Number((await run(em, statement)).numAffectedRows ?? 0);
}

type Executor = { executeQuery: (q: CompiledQuery) => Promise<{ rows: unknown[]; numAffectedRows?: bigint }> };

async function run(em: EntityManager, { text: sqlText, params }: Sql) {
  const text = numbered(sqlText, params);
  const client = em.getTransactionContext<Executor>() ?? (em.getConnection().getClient() as unknown as Executor);
  return client.executeQuery(CompiledQuery.raw(text, params));
}

function numbered(sql: string, params: unknown[]): string {
  let n = 0;
  const text = sql.replace(/\?/g, () => `$${++n}`);
  if (n !== params.length) throw new Error(`bound(): ${n} placeholders but ${params.length} parameters`);
  return text;
}

/**
 * ` and <column> = any(audiences)` for an audience-limited credential (docs/api.md, Audiences), nothing
 * for one that reaches the whole account.
 */
export function inAudiences(column: string, audiences: readonly string[] | null): Sql {
  return audiences ? sql` and ${sql.raw(column)} = any(${[...audiences]}::text[])` : sql.empty;
}

const preparedNames = new Map<string, string>();

/**
 * `bound` for a hot statement whose text takes few forms (each query runs a handful of them): sent as
 * a named prepared statement, so each pooled connection parses and plans it once instead of on every
 * call (planning cost more than running for the small memory tables' candidate queries). Inside a
 * transaction it is an ordinary `bound` call. Only for texts built from code, never from input: each
 * distinct text is one prepared statement per connection.
 */
export async function prepared<T = Record<string, unknown>>(em: EntityManager, statement: Sql): Promise<T[]> {
  if (em.getTransactionContext()) return bound<T>(em, statement);
  const { text: sqlText, params } = statement;
  const text = numbered(sqlText, params);
  let name = preparedNames.get(text);
  if (!name) {
    name = `cairn_${sha256Hex(text).slice(0, 24)}`;
    preparedNames.set(text, name);
  }
  const pool = await (em.getConnection() as unknown as PostgreSqlConnection).getNativeClient();
  const res = await pool.query({ name, text, values: params });
  return res.rows as T[];
}

// Long values ------------------------------------------------------------------------------------
// node-postgres builds each bind message in one growing buffer and parses bytea from hex text, so a
// single 50 MB value costs several hundred MB of transient memory. Long values travel in pieces instead.

const TEXT_PIECE_CHARS = 4_000_000;

/** A column of one row: `table.column` where `key` = `id` (names from code, never from input). */
export type Cell = { table: string; column: string; key: string; id: string };

/** Sets a cell to `text`, sent in pieces and joined by PostgreSQL. Needs a transaction. */
export async function writeLongText(tx: EntityManager, cell: Cell, text: string): Promise<void> {
  const [table, column, key] = [sql.raw(cell.table), sql.raw(cell.column), sql.raw(cell.key)];
  const id = cell.id;
  // Most texts are one piece: one statement, and no temporary table to create (a catalog write).
  if (text.length <= TEXT_PIECE_CHARS) {
    await bound(tx, sql`update ${table} set ${column} = ${text} where ${key} = ${id}`);
    return;
  }
  await bound(tx, sql`create temp table if not exists long_text_piece (seq integer primary key, piece text not null) on commit drop`);
  await bound(tx, sql`truncate long_text_piece`);
  let seq = 0;
  for (let from = 0; from < text.length; ) {
    let to = Math.min(text.length, from + TEXT_PIECE_CHARS);
    // Never split a surrogate pair: each piece is encoded to UTF-8 on its own.
    const c = text.charCodeAt(to - 1);
    if (to < text.length && c >= 0xd800 && c <= 0xdbff) to--;
    await bound(tx, sql`insert into long_text_piece (seq, piece) values (${seq++}, ${text.slice(from, to)})`);
    from = to;
  }
  await bound(tx, sql`update ${table} set ${column} = coalesce((select string_agg(piece, '' order by seq) from long_text_piece), '')
    where ${key} = ${id}`);
}

/**
 * Reads slices of a bytea cell: `length` bytes from `at` (0-based); null when the row is gone. The column should use storage EXTERNAL (uncompressed), so each slice reads only its own TOAST
 * chunks. Long values are read piece by piece (core/ingest/extraction/parts.ts, readAll and the
 * extraction process's requests), never in one statement.
 */
export function longBytesReader(em: EntityManager, cell: Cell) {
  const [table, column, key] = [sql.raw(cell.table), sql.raw(cell.column), sql.raw(cell.key)];
  return async (at: number, length: number): Promise<Buffer | null> => {
    const [row] = await bound<{ piece: Buffer }>(em,
      sql`select substring(${column} from ${at + 1} for ${length}) as piece from ${table} where ${key} = ${cell.id}`);
    return row?.piece ?? null;
  };
}
