import { Migration } from '@mikro-orm/migrations';

/**
 * OAuth for MCP clients (spec 5, MCP OAuth): the authorization server's storage, its platform keys, and
 * the connected applications whose state decides an OAuth token's effective scopes on every request.
 */
export class Migration0008Oauth extends Migration {
  override name = '0008-oauth';

  override up(): void {
    // Everything oidc-provider persists (clients, grants, authorization codes, access and refresh
    // tokens, interactions, its own short sessions), one row per model instance. Rows are keyed by the
    // SHA-256 digest of the instance id, because for tokens and codes the id is the bearer value itself:
    // the raw value is never stored. account_id, client_id and grant_id are copied out of the payload so
    // that revoking a connected application and deleting an account are single indexed statements.
    this.addSql(`create table oauth_payload (
      kind text not null,
      id_digest text not null,
      payload jsonb not null,
      account_id uuid references account(id) on delete cascade,
      client_id text,
      grant_id text,
      uid text,
      expires_at timestamptz,
      consumed_at timestamptz,
      primary key (kind, id_digest)
    );`);
    this.addSql('create index oauth_payload_grant_idx on oauth_payload(grant_id) where grant_id is not null;');
    this.addSql('create index oauth_payload_uid_idx on oauth_payload(uid) where uid is not null;');
    this.addSql('create index oauth_payload_account_client_idx on oauth_payload(account_id, client_id) where account_id is not null;');
    this.addSql('create index oauth_payload_expires_idx on oauth_payload(expires_at) where expires_at is not null;');

    // Key material every API process must share (token signing keys, cookie keys): generated once by
    // whichever process starts first (insert ... on conflict do nothing), then read by all.
    this.addSql(`create table oauth_secret (
      name text primary key,
      value jsonb not null,
      created_at timestamptz not null default now()
    );`);

    // A connected application: one OAuth client authorized by one account, with the effective scopes
    // the user chose at consent. Revoking sets revoked_at (and deletes the client's grants and tokens
    // for that account); authorizing again later starts a new row.
    this.addSql(`create table oauth_connected_app (
      id uuid primary key,
      account_id uuid not null references account(id) on delete cascade,
      client_id text not null,
      client_name text,
      scopes text[] not null check (scopes <@ array['memory.read', 'memory.write']::text[]),
      created_at timestamptz not null default now(),
      authorized_at timestamptz not null default now(),
      last_used_at timestamptz,
      revoked_at timestamptz
    );`);
    this.addSql(`create unique index oauth_connected_app_active_idx on oauth_connected_app(account_id, client_id)
      where revoked_at is null;`);
  }

  override down(): void {
    this.addSql('drop table if exists oauth_connected_app;');
    this.addSql('drop table if exists oauth_secret;');
    this.addSql('drop table if exists oauth_payload;');
  }
}
