CREATE OR REPLACE FUNCTION public.cairn_memory_message_tsv()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  new.tsv := cairn_message_tsv(new.content, (select label from memory_peer where id = new.peer_id), new.created_at);
  return new;
end $function$;
