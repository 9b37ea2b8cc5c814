CREATE OR REPLACE FUNCTION public.cairn_reserve(p_reservation uuid, p_account uuid, p_metric text, p_base integer, p_max_provider integer, p_consume_quota boolean, p_now timestamp with time zone, OUT r_status text, OUT r_monthly integer, OUT r_onboarding integer, OUT r_period_start text, OUT r_period_end text, OUT r_allowance integer, OUT r_daily_limit integer, OUT r_daily_used integer, OUT r_monthly_limit integer, OUT r_monthly_used integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
declare
  today date := (p_now at time zone 'UTC')::date;
  month_start date := date_trunc('month', (p_now at time zone 'UTC'))::date;
  cost integer := p_base + p_max_provider;
  from_m integer;
  from_o integer;
  is_current boolean;
begin
  select case when p_metric = 'query' then a.query_daily_limit else a.ingest_daily_limit end,
         case when p_metric = 'query' then a.query_monthly_limit else a.ingest_monthly_limit end
    into r_daily_limit, r_monthly_limit
    from account a where a.id = p_account;
  if not found then r_status := 'no_account'; return; end if;
  select * into is_current, r_monthly, r_onboarding, r_period_start, r_period_end, r_allowance from cairn_lock_balance(p_account, p_now);
  if not is_current then r_status := 'stale'; return; end if;

  if p_consume_quota then
    select coalesce(max(q.used) filter (where q.period = 'day'), 0), coalesce(max(q.used) filter (where q.period = 'month'), 0)
      into r_daily_used, r_monthly_used
      from quota_usage q
     where q.account_id = p_account and q.metric = p_metric
       and ((q.period = 'day' and q.period_start = today) or (q.period = 'month' and q.period_start = month_start));
    if r_daily_used >= r_daily_limit then r_status := 'quota_day'; return; end if;
    if r_monthly_used >= r_monthly_limit then r_status := 'quota_month'; return; end if;
  end if;

  if r_monthly + r_onboarding < cost then r_status := 'credits'; return; end if;
  from_m := least(cost, r_monthly); -- monthly credits are spent first
  from_o := cost - from_m;

  insert into credit_reservation (id, account_id, metric, base_cost, max_provider_cost, from_monthly, from_onboarding, status)
  values (p_reservation, p_account, p_metric, p_base, p_max_provider, from_m, from_o, 'held')
  on conflict (id) do nothing;
  if not found then r_status := 'exists'; return; end if;

  if p_consume_quota then
    insert into quota_usage (account_id, metric, period, period_start, used)
    values (p_account, p_metric, 'day', today, 1), (p_account, p_metric, 'month', month_start, 1)
    on conflict (account_id, metric, period, period_start) do update set used = quota_usage.used + 1;
    r_daily_used := r_daily_used + 1;
    r_monthly_used := r_monthly_used + 1;
  end if;

  insert into credit_ledger (account_id, idempotency_key, kind, amount, monthly_delta, onboarding_delta,
      monthly_after, onboarding_after, reservation_id, metric)
  values (p_account, 'reserve:' || p_reservation, 'reserve', cost, -from_m, -from_o,
      r_monthly - from_m, r_onboarding - from_o, p_reservation, p_metric)
  on conflict (account_id, idempotency_key) do nothing;
  if found and cost > 0 then
    r_monthly := r_monthly - from_m;
    r_onboarding := r_onboarding - from_o;
    update credit_balance set monthly_remaining = r_monthly, onboarding_remaining = r_onboarding, updated_at = now()
     where account_id = p_account;
  end if;
  r_status := 'ok';
end $function$;
