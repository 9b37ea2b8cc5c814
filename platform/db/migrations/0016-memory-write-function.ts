import { Migration } from '@mikro-orm/migrations';

/**
 * The message write (core/memory/messages.ts addMessages) as a function: the same single statement,
 * but PL/pgSQL keeps its plan per connection, where a statement sent with bind parameters is planned
 * again on every write (planning was about a third of the statement's PostgreSQL time). One call is
 * still one statement, one round trip and one commit; NOTIFY is delivered at that commit.
 */
/** The function as this migration creates it (also what the next version restores on the way down). */
export const ADD_MESSAGES_0016 = `create or replace function cairn_add_messages(
        p_account uuid, p_workspace text, p_session text, p_peer text, p_sources uuid[], p_event uuid, p_agent text,
        p_infer boolean, p_idem text, p_request_hash text, p_receipt jsonb, p_created_at timestamptz, p_metadata jsonb,
        p_audience text, p_ids uuid[], p_positions integer[], p_roles text[], p_contents text[], p_hashes text[],
        out r_session boolean, out r_peer boolean, out r_sources boolean, out r_inserted integer)
      language plpgsql as $$
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
                   returning id, peer_id, session_id),
             m as (insert into memory_message (id, account_id, peer_id, session_id, event_id, position, role, content, agent_id, metadata,
                     source_ids, created_at, content_hash, audience)
                   select u.id, p_account, e.peer_id, e.session_id, e.id, u.position, u.role, u.content, p_agent, p_metadata, p_sources,
                          coalesce(p_created_at, date_trunc('milliseconds', now())), u.hash, p_audience
                     from e, unnest(p_ids, p_positions, p_roles, p_contents, p_hashes) as u(id, position, role, content, hash)
                   returning 1),
             n as (select pg_notify('cairn_memory_event', '') from e)
        select exists (select 1 from s), exists (select 1 from p), (select ok from src),
               (select count(*) from e)::integer + 0 * (select count(*) from m) + 0 * (select count(*) from n)
          into r_session, r_peer, r_sources, r_inserted;
      end $$;`;

export class Migration0016MemoryWriteFunction extends Migration {
  override name = '0016-memory-write-function';

  override up(): void {
    this.addSql(ADD_MESSAGES_0016);
  }

  override down(): void {
    this.addSql('drop function if exists cairn_add_messages;');
  }
}
