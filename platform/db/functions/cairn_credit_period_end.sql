CREATE OR REPLACE FUNCTION public.cairn_credit_period_end(p_start date, p_anchor_day integer)
 RETURNS date
 LANGUAGE sql
 IMMUTABLE
AS $function$
  select (m + (least(p_anchor_day, extract(day from (m + interval '1 month' - interval '1 day'))::integer) - 1))::date
    from (select (date_trunc('month', p_start) + interval '1 month')::date as m) next_month
$function$;
