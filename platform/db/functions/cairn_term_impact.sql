CREATE OR REPLACE FUNCTION public.cairn_term_impact(p_tf integer, p_len integer)
 RETURNS real
 LANGUAGE sql
 IMMUTABLE PARALLEL SAFE
AS $function$
  select (0.1 * (case p_tf when 1 then 1.0 when 2 then 1.25 when 3 then 1.3611111111 when 4 then 1.4236111111
            else 1.6449340668 - 1.0 / p_tf + 0.5 / (p_tf::float8 ^ 2) - 1.0 / (6 * p_tf::float8 ^ 3) end)
          / 1.6449340668 / (ln(p_len + 1) / ln(2)))::real
$function$;
