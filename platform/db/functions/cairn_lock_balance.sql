CREATE OR REPLACE FUNCTION public.cairn_lock_balance(p_account uuid, p_now timestamp with time zone, OUT r_current boolean, OUT r_monthly integer, OUT r_onboarding integer, OUT r_period_start text, OUT r_period_end text, OUT r_allowance integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
declare
  anchor integer;
  b record;
begin
  select extract(day from a.created_at at time zone 'UTC')::integer, a.monthly_credits into anchor, r_allowance
    from account a where a.id = p_account;
  select * into b from credit_balance cb where cb.account_id = p_account for update;
  r_current := found and (p_now at time zone 'UTC')::date < cairn_credit_period_end(b.period_start, anchor);
  if not r_current then return; end if;
  r_monthly := b.monthly_remaining;
  r_onboarding := b.onboarding_remaining;
  r_period_start := to_char(b.period_start, 'YYYY-MM-DD');
  r_period_end := to_char(cairn_credit_period_end(b.period_start, anchor), 'YYYY-MM-DD');
end $function$;
