CREATE OR REPLACE FUNCTION public.cairn_message_tsv(p_content text, p_label text, p_at timestamp with time zone)
 RETURNS tsvector
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select to_tsvector('english', p_content)
         || to_tsvector('english', p_label || ' ' || to_char(p_at at time zone 'UTC', 'FMDD FMMonth YYYY'))
$function$;
