import { Migration } from '@mikro-orm/migrations';

export class Migration0002Accounts extends Migration {
  override name = '0002-accounts';

  override up(): void {
    this.addSql(`create table account (
      id uuid primary key,
      email text not null,
      email_normalized text not null unique,
      password_hash text not null,
      display_name text,
      state text not null default 'active' check (state in ('active', 'deletion_pending')),
      disabled_at timestamptz,
      linked_providers jsonb not null default '{"google": false, "github": false}',
      monthly_credits integer not null check (monthly_credits >= 0),
      onboarding_credits integer not null check (onboarding_credits >= 0),
      query_daily_limit integer not null check (query_daily_limit >= 0),
      ingest_daily_limit integer not null check (ingest_daily_limit >= 0),
      query_monthly_limit integer not null check (query_monthly_limit >= 0),
      ingest_monthly_limit integer not null check (ingest_monthly_limit >= 0),
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );`);

    // Tokens are 256-bit random values, so a fast SHA-256 digest is a safe stored form and allows an
    // indexed lookup (argon2 is for low-entropy passwords only).
    this.addSql(`create table browser_session (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      token_hash text not null unique,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      last_seen_at timestamptz not null default now(),
      ended_at timestamptz
    );`);
    this.addSql('create index browser_session_account_idx on browser_session(account_id);');

    this.addSql(`create table cli_device_authorization (
      id uuid primary key,
      device_code_hash text not null unique,
      user_code text not null,
      client_name text,
      status text not null default 'pending' check (status in ('pending', 'approved', 'consumed')),
      account_id uuid references account(id) on delete cascade,
      interval_seconds integer not null,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      last_polled_at timestamptz,
      approved_at timestamptz,
      consumed_at timestamptz
    );`);
    this.addSql(
      `create unique index cli_device_user_code_live_idx on cli_device_authorization(user_code) where status = 'pending';`,
    );

    this.addSql(`create table cli_session (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      token_hash text not null unique,
      client_name text,
      created_at timestamptz not null default now(),
      expires_at timestamptz not null,
      last_used_at timestamptz,
      revoked_at timestamptz
    );`);
    this.addSql('create index cli_session_account_idx on cli_session(account_id);');

    this.addSql(`create table api_key (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      name text not null,
      prefix text not null,
      secret_hash text not null unique,
      scopes text[] not null,
      max_preset text not null check (max_preset in ('efficient', 'accuracy')),
      created_at timestamptz not null default now(),
      last_used_at timestamptz,
      revoked_at timestamptz,
      rotated_to uuid references api_key(id) on delete set null
    );`);
    this.addSql('create index api_key_account_idx on api_key(account_id, created_at desc);');

    // Failed sign-in counters per account and per client address, platform by every API process.
    this.addSql(`create table auth_throttle (
      key text primary key,
      window_started_at timestamptz not null,
      failures integer not null
    );`);
  }

  override down(): void {
    for (const t of ['auth_throttle', 'api_key', 'cli_session', 'cli_device_authorization', 'browser_session', 'account']) {
      this.addSql(`drop table if exists ${t};`);
    }
  }
}
