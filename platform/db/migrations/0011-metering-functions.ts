import { Migration } from '@mikro-orm/migrations';

/**
 * Reserve and settle as one database round trip each (core/metering/reservations.ts). Each function
 * is one statement, so it is one transaction: the balance row is locked (select ... for update), then
 * the reservation, exactly as the former multi-statement transactions did; a refusal (429, 402, 409)
 * returns before anything is written. Creating a balance or renewing its monthly period stays in
 * TypeScript (lockBalance): the functions answer 'stale' when that is needed, and the caller renews
 * the balance and calls again — once per account per month.
 */
export class Migration0011MeteringFunctions extends Migration {
  override name = '0011-metering-functions';

  override up(): void {
    // The end of the credit period starting at p_start for an account created on day p_anchor_day of a
    // month (clamped to short months), as creditPeriod() in core/metering/periods.ts computes it.
    this.addSql(`create function cairn_credit_period_end(p_start date, p_anchor_day integer) returns date
      language sql immutable as $$
        select (m + (least(p_anchor_day, extract(day from (m + interval '1 month' - interval '1 day'))::integer) - 1))::date
          from (select (date_trunc('month', p_start) + interval '1 month')::date as m) next_month
      $$;`);

    // Locks an account's balance row (select ... for update, held to the end of the caller's
    // transaction) and says whether its period is current; not current = create or renew it first.
    this.addSql(`create function cairn_lock_balance(p_account uuid, p_now timestamptz,
        out r_current boolean, out r_monthly integer, out r_onboarding integer, out r_period_start text,
        out r_period_end text, out r_allowance integer)
      language plpgsql as $$
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
      end $$;`);

    this.addSql(`create function cairn_reserve(
        p_reservation uuid, p_account uuid, p_metric text, p_base integer, p_max_provider integer,
        p_consume_quota boolean, p_now timestamptz,
        out r_status text, out r_monthly integer, out r_onboarding integer, out r_period_start text,
        out r_period_end text, out r_allowance integer,
        out r_daily_limit integer, out r_daily_used integer, out r_monthly_limit integer, out r_monthly_used integer)
      language plpgsql as $$
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
      end $$;`);

    this.addSql(`create function cairn_settle(
        p_reservation uuid, p_outcome text, p_provider integer, p_now timestamptz,
        out r_status text, out r_account uuid, out r_charged integer, out r_refunded integer,
        out r_monthly integer, out r_onboarding integer, out r_period_start text, out r_period_end text, out r_allowance integer)
      language plpgsql as $$
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
          r_charged := r.charged;
          r_refunded := r.refunded;
          return;
        end if;

        r_charged := case p_outcome
          when 'retrieval_failed' then 0
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
      end $$;`);
  }

  override down(): void {
    this.addSql('drop function if exists cairn_settle(uuid, text, integer, timestamptz);');
    this.addSql('drop function if exists cairn_reserve(uuid, uuid, text, integer, integer, boolean, timestamptz);');
    this.addSql('drop function if exists cairn_lock_balance(uuid, timestamptz);');
    this.addSql('drop function if exists cairn_credit_period_end(date, integer);');
  }
}
