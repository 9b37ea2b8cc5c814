import { Migration } from '@mikro-orm/migrations';

export class Migration0004Metering extends Migration {
  override name = '0004-metering';

  override up(): void {
    // Current balances, one row per account, changed only together with a ledger row in the same
    // transaction while the row is locked (select ... for update).
    this.addSql(`create table credit_balance (
      account_id uuid primary key references account(id) on delete cascade,
      period_start date not null,
      monthly_remaining integer not null check (monthly_remaining >= 0),
      onboarding_remaining integer not null check (onboarding_remaining >= 0),
      updated_at timestamptz not null default now()
    );`);

    // Append-only: rows are inserted, never updated or deleted (except with the account). Each carries
    // an idempotency key so a retried writer never writes twice. The sum of the deltas of an account
    // equals its balance (verifyLedger).
    this.addSql(`create table credit_ledger (
      id bigserial primary key,
      account_id uuid not null references account(id) on delete cascade,
      idempotency_key text not null,
      kind text not null check (kind in (
        'grant_monthly', 'grant_onboarding', 'period_reset', 'reserve', 'charge', 'refund', 'adjust', 'limit_change')),
      amount integer not null check (amount >= 0),
      monthly_delta integer not null,
      onboarding_delta integer not null,
      monthly_after integer not null,
      onboarding_after integer not null,
      reservation_id uuid,
      metric text check (metric in ('query', 'ingest')),
      reason text,
      created_at timestamptz not null default now(),
      unique (account_id, idempotency_key)
    );`);
    this.addSql('create index credit_ledger_account_idx on credit_ledger(account_id, id desc);');
    this.addSql(`create function credit_ledger_reject_update() returns trigger language plpgsql as $$
      begin raise exception 'credit_ledger is append-only'; end $$;`);
    this.addSql(`create trigger credit_ledger_append_only before update on credit_ledger
      for each row execute function credit_ledger_reject_update();`);

    // Reservations: the maximum possible cost held before work, settled exactly once.
    this.addSql(`create table credit_reservation (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      metric text not null check (metric in ('query', 'ingest')),
      base_cost integer not null check (base_cost >= 0),
      max_provider_cost integer not null check (max_provider_cost >= 0),
      from_monthly integer not null check (from_monthly >= 0),
      from_onboarding integer not null check (from_onboarding >= 0),
      status text not null check (status in ('held', 'settled')),
      charged integer,
      refunded integer,
      outcome text,
      created_at timestamptz not null default now(),
      settled_at timestamptz
    );`);
    this.addSql(`create index credit_reservation_held_idx on credit_reservation(created_at) where status = 'held';`);

    // Quota counters: separate rows per metric and per UTC day / UTC month.
    this.addSql(`create table quota_usage (
      account_id uuid not null references account(id) on delete cascade,
      metric text not null check (metric in ('query', 'ingest')),
      period text not null check (period in ('day', 'month')),
      period_start date not null,
      used integer not null check (used >= 0),
      primary key (account_id, metric, period, period_start)
    );`);

    // Account-wide request windows (rate-limiter-flexible's PostgreSQL store layout).
    this.addSql(`create table rate_limit (
      key varchar(255) primary key,
      points integer not null default 0,
      expire bigint
    );`);
  }

  override down(): void {
    for (const t of ['rate_limit', 'quota_usage', 'credit_reservation', 'credit_ledger', 'credit_balance']) {
      this.addSql(`drop table if exists ${t};`);
    }
    this.addSql('drop function if exists credit_ledger_reject_update();');
  }
}
