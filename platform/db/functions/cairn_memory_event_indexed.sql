CREATE OR REPLACE FUNCTION public.cairn_memory_event_indexed()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
declare d_n bigint; d_len bigint;
begin
  select count(*), coalesce(sum(cairn_tsv_length(tsv)), 0) into d_n, d_len from memory_message where event_id = new.id and available;
  insert into memory_index_version as v (account_id, version, messages, message_length) values (new.account_id, 1, d_n, d_len)
    on conflict (account_id) do update set version = v.version + 1, messages = v.messages + excluded.messages,
      message_length = v.message_length + excluded.message_length
    returning v.version into new.indexed_at;
  return new;
end $function$;
