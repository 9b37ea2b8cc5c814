import { Migration } from '@mikro-orm/migrations';

/**
 * An impact index for the full-text first stage over source records (core/retrieval/terms.queries.ts).
 * record_term holds, per source, batch of records and lexeme, the records containing the lexeme and
 * each one's precomputed share of ts_rank (cairn_term_impact), so a query sums impacts from a few
 * rows instead of fetching and ranking every matching record. Rows go in with the records (same
 * statement) and out with them; deleting a source row (account deletion) cascades.
 */
export class Migration0014RecordTerms extends Migration {
  override name = '0014-record-terms';

  override up(): void {
    // ts_rank(tsv, query, 1) of an OR query is the sum over the query's lexemes of
    // 0.1 · Σ_{j≤tf} 1/j² / (π²/6), divided by log2(positions + 1) and by the number of query lexemes
    // (tsrank.c, calc_rank_or, default weight D). The first four terms are exact; past them the sum's
    // tail is its asymptotic expansion (error under 1e-5).
    this.addSql(`create function cairn_term_impact(p_tf integer, p_len integer) returns real
      language sql immutable parallel safe as $$
        select (0.1 * (case p_tf when 1 then 1.0 when 2 then 1.25 when 3 then 1.3611111111 when 4 then 1.4236111111
                  else 1.6449340668 - 1.0 / p_tf + 0.5 / (p_tf::float8 ^ 2) - 1.0 / (6 * p_tf::float8 ^ 3) end)
                / 1.6449340668 / (ln(p_len + 1) / ln(2)))::real
      $$;`);
    // Lexemes compare bytewise ("C"), so a prefix query term is one index range.
    this.addSql(`create table record_term (
      account_id uuid not null,
      source_id uuid not null references source(id) on delete cascade,
      lexeme text collate "C" not null,
      record_ids uuid[] not null,
      impacts real[] not null
    );`);
    this.addSql('create index record_term_lexeme_idx on record_term(account_id, lexeme);');
    this.addSql('create index record_term_source_idx on record_term(source_id);');
    // Records stored before this migration, grouped per source and 2,000 records as ingest groups them
    // (core/retrieval/terms.queries.ts; written out here because a migration must not change later).
    this.addSql(`insert into record_term (account_id, source_id, lexeme, record_ids, impacts)
      select r.account_id, r.source_id, u.lexeme, array_agg(r.id),
             array_agg(cairn_term_impact(coalesce(array_length(u.positions, 1), 1), l.len))
        from (select id, account_id, source_id, tsv, (row_number() over (partition by source_id order by id) - 1) / 2000 as batch
                from record) r
        cross join lateral (select sum(coalesce(array_length(x.positions, 1), 1))::integer as len from unnest(r.tsv) x) l
        cross join lateral unnest(r.tsv) u
       group by r.account_id, r.source_id, r.batch, u.lexeme;`);
  }

  override down(): void {
    this.addSql('drop table if exists record_term;');
    this.addSql('drop function if exists cairn_term_impact(integer, integer);');
  }
}
