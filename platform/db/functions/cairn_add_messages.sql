CREATE OR REPLACE FUNCTION public.cairn_add_messages(p_write jsonb, OUT r_session boolean, OUT r_peer boolean, OUT r_sources boolean, OUT r_inserted integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
-- The memory write (core/memory/messages.queries.ts, insertWrite) as one object: account, workspace,
-- session, peer, sources, event, agent, infer, idempotency_key, request_hash, receipt, created_at,
-- metadata, audiences (null: the whole account) and messages [{id, role, content, hash}], each message's
-- position its index. One statement: it locks the labels (for share), and inserts the event and its
-- messages only when the session, the peer and every source check out.
declare
  w_account uuid := (p_write->>'account')::uuid;
  w_workspace text := p_write->>'workspace';
  w_sources uuid[] := array(select x.id::uuid from jsonb_array_elements_text(p_write->'sources') with ordinality as x(id, n) order by x.n);
  w_agent text := p_write->>'agent';
  w_metadata jsonb := nullif(p_write->'metadata', 'null'::jsonb);
  w_created_at timestamptz := (p_write->>'created_at')::timestamptz;
  w_audiences text[] := case when jsonb_typeof(p_write->'audiences') = 'array'
                          then array(select jsonb_array_elements_text(p_write->'audiences')) end;
  v_at timestamptz := coalesce(w_created_at, date_trunc('milliseconds', now()));
begin
  with s as (select id, label from memory_session where account_id = w_account and workspace = w_workspace and label = p_write->>'session'
                and (w_audiences is null or audience = any(w_audiences)) for share),
       p as (select id, label, audience from memory_peer where account_id = w_account and workspace = w_workspace and label = p_write->>'peer'
                and (w_audiences is null or audience = any(w_audiences)) for share),
       src as (select count(*) = cardinality(w_sources) as ok from ingest_job
                where account_id = w_account and id = any(w_sources) and kind in ('url', 'file') and status = 'succeeded'
                  and (w_audiences is null or audience = any(w_audiences))),
       e as (insert into memory_event (id, account_id, kind, status, peer_id, session_id, peer_label, session_label, agent_id,
               infer, idempotency_key, request_hash, receipt, created_at, audience)
             select (p_write->>'event')::uuid, w_account, 'add_messages', 'queued', p.id, s.id, p.label, s.label, w_agent,
                    (p_write->>'infer')::boolean, p_write->>'idempotency_key', p_write->>'request_hash',
                    nullif(p_write->'receipt', 'null'::jsonb), coalesce(w_created_at, now()), p.audience
               from s, p, src where src.ok
             on conflict (account_id, idempotency_key) where idempotency_key is not null do nothing
             returning id, peer_id, session_id, peer_label, audience),
       m as (insert into memory_message (id, account_id, peer_id, session_id, event_id, position, role, content, agent_id, metadata,
               source_ids, created_at, content_hash, audience, tsv)
             select (u.message->>'id')::uuid, w_account, e.peer_id, e.session_id, e.id, (u.n - 1)::integer, u.message->>'role',
                    u.message->>'content', w_agent, w_metadata, w_sources, v_at, u.message->>'hash', e.audience,
                    cairn_message_tsv(u.message->>'content', e.peer_label, v_at)
               from e, jsonb_array_elements(p_write->'messages') with ordinality as u(message, n)
             returning 1)
  select exists (select 1 from s), exists (select 1 from p), (select ok from src),
         (select count(*) from e)::integer + 0 * (select count(*) from m)
    into r_session, r_peer, r_sources, r_inserted;
end $function$;
