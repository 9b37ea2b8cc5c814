import { Migration } from '@mikro-orm/migrations';
import { ADD_MESSAGES_0022 } from './0022-search-statistics.ts';

/** The message write with its nineteen positional arguments, as this migration leaves it. */
export const ADD_MESSAGES_POSITIONAL = `create function cairn_add_messages(
        p_account uuid, p_workspace text, p_session text, p_peer text, p_sources uuid[], p_event uuid, p_agent text,
        p_infer boolean, p_idem text, p_request_hash text, p_receipt jsonb, p_created_at timestamptz, p_metadata jsonb,
        p_audiences text[], p_ids uuid[], p_positions integer[], p_roles text[], p_contents text[], p_hashes text[],
        out r_session boolean, out r_peer boolean, out r_sources boolean, out r_inserted integer)
      language plpgsql as $$
      declare v_at timestamptz := coalesce(p_created_at, date_trunc('milliseconds', now()));
      begin
        with s as (select id, label from memory_session where account_id = p_account and workspace = p_workspace and label = p_session
                      and (p_audiences is null or audience = any(p_audiences)) for share),
             p as (select id, label, audience from memory_peer where account_id = p_account and workspace = p_workspace and label = p_peer
                      and (p_audiences is null or audience = any(p_audiences)) for share),
             src as (select count(*) = cardinality(p_sources) as ok from ingest_job
                      where account_id = p_account and id = any(p_sources) and kind in ('url', 'file') and status = 'succeeded'
                        and (p_audiences is null or audience = any(p_audiences))),
             e as (insert into memory_event (id, account_id, kind, status, peer_id, session_id, peer_label, session_label, agent_id,
                     infer, idempotency_key, request_hash, receipt, created_at, audience)
                   select p_event, p_account, 'add_messages', 'queued', p.id, s.id, p.label, s.label, p_agent, p_infer, p_idem,
                          p_request_hash, p_receipt, coalesce(p_created_at, now()), p.audience
                     from s, p, src where src.ok
                   on conflict (account_id, idempotency_key) where idempotency_key is not null do nothing
                   returning id, peer_id, session_id, peer_label, audience),
             m as (insert into memory_message (id, account_id, peer_id, session_id, event_id, position, role, content, agent_id, metadata,
                     source_ids, created_at, content_hash, audience, tsv)
                   select u.id, p_account, e.peer_id, e.session_id, e.id, u.position, u.role, u.content, p_agent, p_metadata, p_sources,
                          v_at, u.hash, e.audience, cairn_message_tsv(u.content, e.peer_label, v_at)
                     from e, unnest(p_ids, p_positions, p_roles, p_contents, p_hashes) as u(id, position, role, content, hash)
                   returning 1)
        select exists (select 1 from s), exists (select 1 from p), (select ok from src),
               (select count(*) from e)::integer + 0 * (select count(*) from m)
          into r_session, r_peer, r_sources, r_inserted;
      end $$;`;

/**
 * Audiences bound every route, not only retrieval (docs/api.md, Audiences). Peers, sessions and memory
 * events get an audience column: a label carries the audience of the key that created it, an event the
 * audience of the peer or session it is about. The memory write takes the caller's audiences, finds the
 * session, peer and sources only inside them, and stamps the event and its messages with the peer's
 * audience. Existing rows: a label takes the one audience all its messages share (none: it stays
 * unlabelled, outside every limited key), an event its messages' or its label's, and a source deletion
 * job its source's.
 */
export class Migration0023AudienceBoundaries extends Migration {
  override name = '0023-audience-boundaries';

  override up(): void {
    for (const t of ['memory_peer', 'memory_session', 'memory_event']) this.addSql(`alter table ${t} add column audience text;`);
    for (const [table, column] of [['memory_peer', 'peer_id'], ['memory_session', 'session_id']]) {
      this.addSql(`update ${table} l set audience = m.audience
        from (select ${column} as id, min(audience) as audience from memory_message group by ${column}
               having count(audience) = count(*) and count(distinct audience) = 1) m
        where m.id = l.id;`);
    }
    this.addSql(`update memory_event e set audience = m.audience
      from (select distinct on (event_id) event_id, audience from memory_message order by event_id) m
      where e.kind = 'add_messages' and m.event_id = e.id;`);
    this.addSql(`update memory_event e set audience = p.audience from memory_peer p where e.kind = 'delete_peer' and p.id = e.peer_id;`);
    this.addSql(`update memory_event e set audience = s.audience from memory_session s where e.kind = 'delete_session' and s.id = e.session_id;`);
    this.addSql(`update ingest_job j set audience = s.audience from source s where j.kind = 'source_deletion' and s.id = j.source_id;`);

    this.addSql(`drop function cairn_add_messages(uuid, text, text, text, uuid[], uuid, text, boolean, text, text, jsonb, timestamptz,
      jsonb, text, uuid[], integer[], text[], text[], text[]);`);
    this.addSql(ADD_MESSAGES_POSITIONAL);
  }

  override down(): void {
    this.addSql(`drop function cairn_add_messages(uuid, text, text, text, uuid[], uuid, text, boolean, text, text, jsonb, timestamptz,
      jsonb, text[], uuid[], integer[], text[], text[], text[]);`);
    this.addSql(ADD_MESSAGES_0022);
    for (const t of ['memory_peer', 'memory_session', 'memory_event']) this.addSql(`alter table ${t} drop column audience;`);
  }
}
