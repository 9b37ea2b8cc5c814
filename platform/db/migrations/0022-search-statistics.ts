import { Migration } from '@mikro-orm/migrations';
import { ADD_MESSAGES_0018 } from './0018-memory-write-no-notify.ts';

/**
 * What retrieval needs to rank everything an account can search by one measure (BM25 with the
 * account's own statistics, core/retrieval/search-index.ts), and to keep the API's in-memory copy
 * of it exact:
 *
 * - A message's search vector holds its content, then its speaker's label and the UTC date it was said
 *   ("8 May 2023"), so "what did Caroline say in May 2023" finds it; the cited text stays the content.
 *   cairn_add_messages computes it at insert (it was generated from the content alone), and a trigger
 *   for any other insert that leaves it out.
 * - cairn_tsv_length: a vector's length as ranking counts it (positions, at least one per lexeme), the
 *   one definition of document length for records, messages and claims.
 * - Per account, memory_index_version: a version moved by every committed change to searchable memory
 *   (an add-event succeeding, which makes its messages available; a claim added or changed; anything
 *   deleted), the number and total length of searchable messages and claims, and reset_at, the version
 *   of the last deletion. Events and claims changed are stamped with the version that saw them
 *   (indexed_at): a copy at version w loads what is stamped after w, and reloads everything when a
 *   deletion happened since. The stamp takes the version row's lock until commit, so versions are handed
 *   out in commit order and everything stamped at or below a committed version is itself committed.
 * - Per source, the number and total length of its records, written by ingest with them, so the
 *   account's totals are a sum over its active sources.
 */
export const ADD_MESSAGES_0022 = `create or replace function cairn_add_messages(
        p_account uuid, p_workspace text, p_session text, p_peer text, p_sources uuid[], p_event uuid, p_agent text,
        p_infer boolean, p_idem text, p_request_hash text, p_receipt jsonb, p_created_at timestamptz, p_metadata jsonb,
        p_audience text, p_ids uuid[], p_positions integer[], p_roles text[], p_contents text[], p_hashes text[],
        out r_session boolean, out r_peer boolean, out r_sources boolean, out r_inserted integer)
      language plpgsql as $$
      declare v_at timestamptz := coalesce(p_created_at, date_trunc('milliseconds', now()));
      begin
        with s as (select id, label from memory_session where account_id = p_account and workspace = p_workspace and label = p_session for share),
             p as (select id, label from memory_peer where account_id = p_account and workspace = p_workspace and label = p_peer for share),
             src as (select count(*) = cardinality(p_sources) as ok from ingest_job
                      where account_id = p_account and id = any(p_sources) and kind in ('url', 'file') and status = 'succeeded'),
             e as (insert into memory_event (id, account_id, kind, status, peer_id, session_id, peer_label, session_label, agent_id,
                     infer, idempotency_key, request_hash, receipt, created_at)
                   select p_event, p_account, 'add_messages', 'queued', p.id, s.id, p.label, s.label, p_agent, p_infer, p_idem,
                          p_request_hash, p_receipt, coalesce(p_created_at, now())
                     from s, p, src where src.ok
                   on conflict (account_id, idempotency_key) where idempotency_key is not null do nothing
                   returning id, peer_id, session_id, peer_label),
             m as (insert into memory_message (id, account_id, peer_id, session_id, event_id, position, role, content, agent_id, metadata,
                     source_ids, created_at, content_hash, audience, tsv)
                   select u.id, p_account, e.peer_id, e.session_id, e.id, u.position, u.role, u.content, p_agent, p_metadata, p_sources,
                          v_at, u.hash, p_audience, cairn_message_tsv(u.content, e.peer_label, v_at)
                     from e, unnest(p_ids, p_positions, p_roles, p_contents, p_hashes) as u(id, position, role, content, hash)
                   returning 1)
        select exists (select 1 from s), exists (select 1 from p), (select ok from src),
               (select count(*) from e)::integer + 0 * (select count(*) from m)
          into r_session, r_peer, r_sources, r_inserted;
      end $$;`;

const LIVE_CLAIM = (r: string) => `${r}.state = 'current' and ${r}.eligibility = 'eligible'`;

export class Migration0022SearchStatistics extends Migration {
  override name = '0022-search-statistics';

  override up(): void {
    this.addSql(`create function cairn_tsv_length(v tsvector) returns integer language sql immutable parallel safe as $$
        select coalesce(sum(coalesce(array_length(x.positions, 1), 1)), 0)::integer from unnest(v) x
      $$;`);
    // A message's vector: its content, then its speaker's label and the UTC date it was said. The month
    // is spelt in English whatever the server's locale ('Month' without the TM prefix).
    this.addSql(`create function cairn_message_tsv(p_content text, p_label text, p_at timestamptz) returns tsvector
      language sql immutable parallel safe as $$
        select to_tsvector('english', p_content)
               || to_tsvector('english', p_label || ' ' || to_char(p_at at time zone 'UTC', 'FMDD FMMonth YYYY'))
      $$;`);
    this.addSql('alter table memory_message alter column tsv drop expression;');
    this.addSql(`update memory_message m set tsv = cairn_message_tsv(m.content, p.label, m.created_at)
      from memory_peer p where p.id = m.peer_id;`);
    this.addSql(ADD_MESSAGES_0022);
    // Writers other than cairn_add_messages (operators' scripts, tests) get the same vector. Triggers of
    // one event fire in name order: the vector (1_) before the version stamp that measures it (2_).
    this.addSql(`create function cairn_memory_message_tsv() returns trigger language plpgsql as $$
      begin
        new.tsv := cairn_message_tsv(new.content, (select label from memory_peer where id = new.peer_id), new.created_at);
        return new;
      end $$;`);
    this.addSql(`create trigger memory_message_1_vector before insert on memory_message for each row
      when (new.tsv is null) execute function cairn_memory_message_tsv();`);
    this.addSql('alter table memory_message alter column tsv set not null;');

    // Versions and totals of searchable memory.
    this.addSql(`create table memory_index_version (
      account_id uuid primary key references account(id) on delete cascade,
      version bigint not null default 0,
      reset_at bigint not null default 0,
      messages bigint not null default 0,
      message_length bigint not null default 0,
      claims bigint not null default 0,
      claim_length bigint not null default 0
    );`);
    this.addSql('alter table memory_event add column indexed_at bigint;');
    this.addSql('alter table memory_claim add column indexed_at bigint;');
    this.addSql(`insert into memory_index_version (account_id, version, reset_at, messages, message_length, claims, claim_length)
      select a.account_id, 1, 1, coalesce(m.n, 0), coalesce(m.len, 0), coalesce(c.n, 0), coalesce(c.len, 0)
        from (select account_id from memory_message union select account_id from memory_claim) a
        left join (select account_id, count(*) as n, sum(cairn_tsv_length(tsv)) as len from memory_message where available group by account_id) m
          on m.account_id = a.account_id
        left join (select account_id, count(*) as n, sum(cairn_tsv_length(tsv)) as len from memory_claim c where ${LIVE_CLAIM('c')} group by account_id) c
          on c.account_id = a.account_id;`);
    this.addSql(`update memory_event set indexed_at = 1 where kind = 'add_messages' and status = 'succeeded';`);
    this.addSql('update memory_claim set indexed_at = 1;');
    this.addSql('create index memory_event_indexed_idx on memory_event(account_id, indexed_at) where indexed_at is not null;');
    this.addSql('create index memory_claim_indexed_idx on memory_claim(account_id, indexed_at);');

    // Messages become searchable when their add-event succeeds (in the transaction that makes them
    // available): the event carries the stamp, so the messages' own update stays in place (HOT, with
    // the table's fillfactor: no indexed column of theirs changes).
    this.addSql(`create function cairn_memory_event_indexed() returns trigger language plpgsql as $$
      declare d_n bigint; d_len bigint;
      begin
        select count(*), coalesce(sum(cairn_tsv_length(tsv)), 0) into d_n, d_len from memory_message where event_id = new.id and available;
        insert into memory_index_version as v (account_id, version, messages, message_length) values (new.account_id, 1, d_n, d_len)
          on conflict (account_id) do update set version = v.version + 1, messages = v.messages + excluded.messages,
            message_length = v.message_length + excluded.message_length
          returning v.version into new.indexed_at;
        return new;
      end $$;`);
    this.addSql(`create trigger memory_event_indexed before update of status on memory_event for each row
      when (new.status = 'succeeded' and old.status <> 'succeeded' and new.kind = 'add_messages') execute function cairn_memory_event_indexed();`);
    // A message written already available (operators' scripts, tests) counts at once and stamps its event.
    this.addSql(`create function cairn_memory_message_indexed() returns trigger language plpgsql as $$
      declare v_version bigint;
      begin
        insert into memory_index_version as v (account_id, version, messages, message_length)
          values (new.account_id, 1, 1, cairn_tsv_length(new.tsv))
          on conflict (account_id) do update set version = v.version + 1, messages = v.messages + 1,
            message_length = v.message_length + excluded.message_length
          returning v.version into v_version;
        update memory_event set indexed_at = v_version where id = new.event_id;
        return new;
      end $$;`);
    this.addSql(`create trigger memory_message_2_indexed before insert on memory_message for each row
      when (new.available) execute function cairn_memory_message_indexed();`);

    // A claim added, or changed in anything retrieval reads. Its tsv is generated after BEFORE triggers
    // run, so the new length is computed from the content here.
    this.addSql(`create function cairn_memory_claim_indexed() returns trigger language plpgsql as $$
      declare d_n integer := 0; d_len bigint := 0;
      begin
        if tg_op = 'UPDATE' and new.content = old.content and new.state = old.state and new.eligibility = old.eligibility
           and new.authority = old.authority and new.valid_from = old.valid_from
           and new.audience is not distinct from old.audience and new.agent_id is not distinct from old.agent_id
           and new.session_id is not distinct from old.session_id and new.message_id is not distinct from old.message_id then
          return new;
        end if;
        if ${LIVE_CLAIM('new')} then
          d_n := 1;
          d_len := cairn_tsv_length(to_tsvector('english', new.content));
        end if;
        if tg_op = 'UPDATE' and ${LIVE_CLAIM('old')} then
          d_n := d_n - 1;
          d_len := d_len - cairn_tsv_length(old.tsv);
        end if;
        insert into memory_index_version as v (account_id, version, claims, claim_length) values (new.account_id, 1, d_n, d_len)
          on conflict (account_id) do update set version = v.version + 1, claims = v.claims + excluded.claims,
            claim_length = v.claim_length + excluded.claim_length
          returning v.version into new.indexed_at;
        return new;
      end $$;`);
    this.addSql(`create trigger memory_claim_indexed before insert or update on memory_claim for each row
      execute function cairn_memory_claim_indexed();`);

    // Deletions (a peer's or session's, cascading) are counted per statement and reset the copies. Only
    // an existing row is updated: when the account itself is being deleted its row is already gone.
    this.addSql(`create function cairn_memory_messages_deleted() returns trigger language plpgsql as $$
      begin
        update memory_index_version v set version = v.version + 1, reset_at = v.version + 1,
               messages = v.messages - g.n, message_length = v.message_length - g.len
          from (select account_id, count(*) as n, sum(cairn_tsv_length(tsv)) as len from gone where available group by account_id) g
         where v.account_id = g.account_id;
        return null;
      end $$;`);
    this.addSql(`create trigger memory_message_deleted after delete on memory_message referencing old table as gone
      for each statement execute function cairn_memory_messages_deleted();`);
    this.addSql(`create function cairn_memory_claims_deleted() returns trigger language plpgsql as $$
      begin
        update memory_index_version v set version = v.version + 1, reset_at = v.version + 1,
               claims = v.claims - g.n, claim_length = v.claim_length - g.len
          from (select account_id, count(*) filter (where ${LIVE_CLAIM('gone')}) as n,
                       coalesce(sum(cairn_tsv_length(tsv)) filter (where ${LIVE_CLAIM('gone')}), 0) as len
                  from gone group by account_id) g
         where v.account_id = g.account_id;
        return null;
      end $$;`);
    this.addSql(`create trigger memory_claim_deleted after delete on memory_claim referencing old table as gone
      for each statement execute function cairn_memory_claims_deleted();`);

    // Records: count and total length per source.
    this.addSql('alter table source add column record_count integer not null default 0, add column record_length bigint not null default 0;');
    this.addSql(`update source s set record_count = r.n, record_length = r.len
      from (select source_id, count(*) as n, sum(cairn_tsv_length(tsv)) as len from record group by source_id) r where r.source_id = s.id;`);
  }

  override down(): void {
    this.addSql('alter table source drop column if exists record_count, drop column if exists record_length;');
    this.addSql('drop trigger if exists memory_claim_deleted on memory_claim;');
    this.addSql('drop trigger if exists memory_message_deleted on memory_message;');
    this.addSql('drop trigger if exists memory_claim_indexed on memory_claim;');
    this.addSql('drop trigger if exists memory_event_indexed on memory_event;');
    this.addSql('drop trigger if exists memory_message_2_indexed on memory_message;');
    this.addSql('drop trigger if exists memory_message_1_vector on memory_message;');
    this.addSql('drop function if exists cairn_memory_message_tsv();');
    this.addSql('drop function if exists cairn_memory_claims_deleted();');
    this.addSql('drop function if exists cairn_memory_messages_deleted();');
    this.addSql('drop function if exists cairn_memory_claim_indexed();');
    this.addSql('drop function if exists cairn_memory_message_indexed();');
    this.addSql('drop function if exists cairn_memory_event_indexed();');
    this.addSql('drop index if exists memory_claim_indexed_idx;');
    this.addSql('drop index if exists memory_event_indexed_idx;');
    this.addSql('alter table memory_claim drop column if exists indexed_at;');
    this.addSql('alter table memory_event drop column if exists indexed_at;');
    this.addSql('drop table if exists memory_index_version;');
    // Back to the vector of the content alone, generated.
    this.addSql(ADD_MESSAGES_0018);
    this.addSql('alter table memory_message drop column tsv;');
    this.addSql(`alter table memory_message add column tsv tsvector generated always as (to_tsvector('english', content)) stored;`);
    this.addSql('create index memory_message_tsv_idx on memory_message using gin(tsv);');
    this.addSql('drop function if exists cairn_message_tsv(text, text, timestamptz);');
    this.addSql('drop function if exists cairn_tsv_length(tsvector);');
  }
}
