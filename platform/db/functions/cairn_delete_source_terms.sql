CREATE OR REPLACE FUNCTION public.cairn_delete_source_terms()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
begin
  delete from record_term t using gone where t.source_id = gone.id;
  return null;
end $function$;
