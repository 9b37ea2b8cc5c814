CREATE OR REPLACE FUNCTION public.cairn_memory_claim_indexed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare d_n integer := 0; d_len bigint := 0;
begin
  if tg_op = 'UPDATE' and new.content = old.content and new.state = old.state and new.eligibility = old.eligibility
     and new.authority = old.authority and new.valid_from = old.valid_from
     and new.audience is not distinct from old.audience and new.agent_id is not distinct from old.agent_id
     and new.session_id is not distinct from old.session_id and new.message_id is not distinct from old.message_id then
    return new;
  end if;
  if new.state = 'current' and new.eligibility = 'eligible' then
    d_n := 1;
    d_len := cairn_tsv_length(to_tsvector('english', new.content));
  end if;
  if tg_op = 'UPDATE' and old.state = 'current' and old.eligibility = 'eligible' then
    d_n := d_n - 1;
    d_len := d_len - cairn_tsv_length(old.tsv);
  end if;
  insert into memory_index_version as v (account_id, version, claims, claim_length) values (new.account_id, 1, d_n, d_len)
    on conflict (account_id) do update set version = v.version + 1, claims = v.claims + excluded.claims,
      claim_length = v.claim_length + excluded.claim_length
    returning v.version into new.indexed_at;
  return new;
end $function$;
