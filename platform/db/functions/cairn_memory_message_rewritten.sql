CREATE OR REPLACE FUNCTION public.cairn_memory_message_rewritten()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  update memory_index_version v set version = v.version + 1, reset_at = v.version + 1,
         messages = v.messages - (case when old.available then 1 else 0 end) + (case when new.available then 1 else 0 end),
         message_length = v.message_length - (case when old.available then cairn_tsv_length(old.tsv) else 0 end)
                                           + (case when new.available then cairn_tsv_length(new.tsv) else 0 end)
   where v.account_id = new.account_id;
  return null;
end $function$;
