import { Migration } from '@mikro-orm/migrations';
import { ADD_MESSAGES_0016 } from './0016-memory-write-function.ts';

/** The function as this migration creates it (also what the next version restores on the way down). */
export const ADD_MESSAGES_0018 = `create or replace function cairn_add_messages(
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
                   returning 1)
        select exists (select 1 from s), exists (select 1 from p), (select ok from src),
               (select count(*) from e)::integer + 0 * (select count(*) from m)
          into r_session, r_peer, r_sources, r_inserted;
      end $$;`;

/**
 * cairn_add_messages without its NOTIFY: a transaction that notifies takes PostgreSQL's global notify
 * lock at commit and holds it through the commit's disk flush (queue entries must appear in commit
 * order), so concurrent message writes, each notifying, committed one at a time instead of sharing
 * flushes. The API now notifies after the write has committed, outside its transaction, at most one
 * notification in flight per process (notifyQueued in core/memory/events.ts); the event row stays
 * the outbox and a dispatcher's poll covers a lost notification.
 */
export class Migration0018MemoryWriteNoNotify extends Migration {
  override name = '0018-memory-write-no-notify';

  override up(): void {
    this.addSql(ADD_MESSAGES_0018);
  }

  override down(): void {
    this.addSql(ADD_MESSAGES_0016);
  }
}
