CREATE OR REPLACE FUNCTION public.cairn_memory_message_indexed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare v_version bigint;
begin
  insert into memory_index_version as v (account_id, version, messages, message_length)
    values (new.account_id, 1, 1, cairn_tsv_length(new.tsv))
    on conflict (account_id) do update set version = v.version + 1, messages = v.messages + 1,
      message_length = v.message_length + excluded.message_length
    returning v.version into v_version;
  update memory_event set indexed_at = v_version where id = new.event_id;
  return new;
end $function$;
