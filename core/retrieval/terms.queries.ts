import { sql, type Sql } from '../../platform/db/sql.ts';

/**
 * The impact index of source records (table record_term): per source, batch of
 * records and lexeme, the ids of the records containing the lexeme and each one's impact, its share of
 * ts_rank(tsv, query, 1) (cairn_term_impact: the term-frequency part over log2 of the record's length).
 * ts_rank of an OR query is the sum of the impacts of its lexemes over their number, so the
 * first stage ranks source records by reading a few rows per query lexeme (one per batch of up to
 * 2,000 records that contain it) and summing floats, instead of fetching every matching record and
 * ranking its tsvector. The ranking is the same; only the matched records' cost per row is smaller.
 */

/**
 * Lateral `l(len)` of a record `r`: its length as ts_rank counts it (positions, at least one per lexeme;
 * platform/db/functions/cairn_tsv_length.sql computes the same). With IMPACT, the one definition of a record's
 * impacts, which ingest writes to record_term.
 */
export const RECORD_LENGTH = 'cross join lateral (select sum(coalesce(array_length(x.positions, 1), 1))::integer as len from unnest(r.tsv) x) l';
/** The impact of `u`, one element of unnest(r.tsv), in its record of length `l.len`. */
export const IMPACT = 'cairn_term_impact(coalesce(array_length(u.positions, 1), 1), l.len)';

/**
 * SELECT of record_term rows for the records of `rel`, a relation with columns id, account_id,
 * source_id, tsv and batch (records grouped into one row per lexeme are of one source and one batch).
 */
export function recordTermRows(rel: Sql): Sql {
  // The two aggregates take each group's rows in the same order, so the arrays stay aligned without
  // sorting each group.
  return sql`select r.account_id, r.source_id, u.lexeme, array_agg(r.id), array_agg(${sql.raw(IMPACT)})
    from ${rel} r
    ${sql.raw(RECORD_LENGTH)}
    cross join lateral unnest(r.tsv) u
   group by r.account_id, r.source_id, r.batch, u.lexeme`;
}

export type TermMatch = { words: string[]; prefix: boolean[] };

/**
 * CTE `hit` (id, score) of the source records matching any of the words (a prefix match where
 * `prefix` says so), scored as ts_rank(tsv, or-query, 1) is, best `limit` first. `sourceWhere` are
 * conditions on the source `s` (status, audiences, selected sources): every row of record_term belongs
 * to one source, so the boundary is applied per row, before any record is read.
 */
export function recordTermHit(
  accountId: string,
  m: TermMatch,
  sourceWhere: Sql[],
  limit: number,
): Sql {
  // Each query lexeme's rows are one index range, read in a subquery of their own (offset 0 keeps the
  // planner from merging it into the join, where it preferred reading the whole table).
  return sql`with q as (
      select distinct l.lexeme collate "C" as lexeme,
             (case when w.prefix then l.lexeme || chr(1114111) else l.lexeme end) collate "C" as last
        from unnest(${m.words}::text[], ${m.prefix}::boolean[]) w(word, prefix), unnest(to_tsvector('english', w.word)) l),
    hit as (
      select e.id, (sum(e.impact) / (select count(*) from q))::real as score
        from q
        cross join lateral (select t.source_id, t.record_ids, t.impacts from record_term t
                             where t.account_id = ${accountId} and t.lexeme between q.lexeme and q.last offset 0) t
        join source s on s.id = t.source_id
        cross join lateral unnest(t.record_ids, t.impacts) e(id, impact)
       where ${sql.join(sourceWhere, ' and ')}
       group by e.id
       order by score desc, e.id
       limit ${limit})`;
}
