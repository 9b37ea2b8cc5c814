CREATE OR REPLACE FUNCTION public.cairn_memory_messages_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  update memory_index_version v set version = v.version + 1, reset_at = v.version + 1,
         messages = v.messages - g.n, message_length = v.message_length - g.len
    from (select account_id, count(*) as n, sum(cairn_tsv_length(tsv)) as len from gone where available group by account_id) g
   where v.account_id = g.account_id;
  return null;
end $function$;
