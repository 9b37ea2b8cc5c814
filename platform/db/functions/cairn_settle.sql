CREATE OR REPLACE FUNCTION public.cairn_settle(p_reservation uuid, p_outcome text, p_provider integer, p_now timestamp with time zone, OUT r_status text, OUT r_account uuid, OUT r_charged integer, OUT r_refunded integer, OUT r_monthly integer, OUT r_onboarding integer, OUT r_period_start text, OUT r_period_end text, OUT r_allowance integer)
 RETURNS record
 LANGUAGE plpgsql
AS $function$
declare
  r record;
  is_current boolean;
  to_o integer;
  to_m integer;
begin
  select cr.account_id into r_account from credit_reservation cr where cr.id = p_reservation;
  if not found then r_status := 'not_found'; return; end if;
  -- Lock order everywhere: balance, then reservation.
  select * into is_current, r_monthly, r_onboarding, r_period_start, r_period_end, r_allowance from cairn_lock_balance(r_account, p_now);
  if not is_current then r_status := 'stale'; return; end if;
  r_status := 'ok';

  select * into r from credit_reservation cr where cr.id = p_reservation for update;
  if r.status = 'settled' then
    -- Settled before (by its work, or by the sweeper as abandoned): the first settlement stands.
    r_status := 'settled';
    r_charged := r.charged;
    r_refunded := r.refunded;
    return;
  end if;

  r_charged := case p_outcome
    when 'retrieval_failed' then 0
    when 'recognition_failed' then 0
    when 'abandoned' then r.base_cost
    else r.base_cost + least(greatest(0, p_provider), r.max_provider_cost) end;
  r_refunded := r.base_cost + r.max_provider_cost - r_charged;
  -- Refund in reverse order of spending: onboarding credits first, then monthly.
  to_o := least(r_refunded, r.from_onboarding);
  to_m := r_refunded - to_o;

  insert into credit_ledger (account_id, idempotency_key, kind, amount, monthly_delta, onboarding_delta,
      monthly_after, onboarding_after, reservation_id, metric, reason)
  values (r_account, 'charge:' || p_reservation, 'charge', r_charged, 0, 0, r_monthly, r_onboarding, p_reservation, r.metric, p_outcome)
  on conflict (account_id, idempotency_key) do nothing;
  if r_refunded > 0 then
    insert into credit_ledger (account_id, idempotency_key, kind, amount, monthly_delta, onboarding_delta,
        monthly_after, onboarding_after, reservation_id, metric, reason)
    values (r_account, 'refund:' || p_reservation, 'refund', r_refunded, to_m, to_o,
        r_monthly + to_m, r_onboarding + to_o, p_reservation, r.metric, p_outcome)
    on conflict (account_id, idempotency_key) do nothing;
    if found then
      r_monthly := r_monthly + to_m;
      r_onboarding := r_onboarding + to_o;
      update credit_balance set monthly_remaining = r_monthly, onboarding_remaining = r_onboarding, updated_at = now()
       where account_id = r_account;
    end if;
  end if;
  update credit_reservation set status = 'settled', charged = r_charged, refunded = r_refunded, outcome = p_outcome, settled_at = now()
   where id = p_reservation;
end $function$;
