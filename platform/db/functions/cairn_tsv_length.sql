CREATE OR REPLACE FUNCTION public.cairn_tsv_length(v tsvector)
 RETURNS integer
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select coalesce(sum(coalesce(array_length(x.positions, 1), 1)), 0)::integer from unnest(v) x
$function$;
