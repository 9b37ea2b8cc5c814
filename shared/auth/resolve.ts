import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { SCOPES, type Preset, type Scope } from '../contracts/account.ts';
import type { AccountState } from '../db/entities/index.ts';
import { bound, prepared } from '../db/sql.ts';
import type { CredentialKind, Principal } from './principal.ts';
import { API_KEY_PREFIX, CLI_TOKEN_PREFIX, digest } from './tokens.ts';

// Credential lookups run on every request: one indexed query each (digest -> unique index), joined with
// the account, and a last-used write at most once a minute per credential.

type Row = {
  id: string;
  account_id: string;
  email: string;
  display_name: string | null;
  state: AccountState;
  created_at: Date;
  expires_at: Date | null;
  last_used: Date | null;
  scopes: string[] | null;
  max_preset: Preset | null;
  audiences: string[] | null;
};

type Lookup = {
  kind: CredentialKind;
  /** Selects the credential's columns as `id, created_at, expires_at, last_used, scopes, max_preset, audiences`. */
  sql: string;
  touch: string;
};

const ACCOUNT_COLUMNS = 'a.id as account_id, a.email, a.display_name, a.state';

// OAuth access tokens (MCP only) resolve in shared/oauth/access-tokens.ts, against the connected-app state.
const lookups = {
  apiKey: {
    kind: 'apiKey',
    sql: `select k.id, k.created_at, null as expires_at, k.last_used_at as last_used, k.scopes, k.max_preset, k.audiences, ${ACCOUNT_COLUMNS}
            from api_key k join account a on a.id = k.account_id
           where k.secret_hash = ? and k.revoked_at is null and a.disabled_at is null`,
    touch: 'update api_key set last_used_at = now() where id = ?',
  },
  cli: {
    kind: 'cli',
    sql: `select s.id, s.created_at, s.expires_at, s.last_used_at as last_used, null as scopes, null as max_preset, null as audiences, ${ACCOUNT_COLUMNS}
            from cli_session s join account a on a.id = s.account_id
           where s.token_hash = ? and s.revoked_at is null and s.expires_at > now() and a.disabled_at is null`,
    touch: 'update cli_session set last_used_at = now() where id = ?',
  },
  browser: {
    kind: 'browser',
    sql: `select s.id, s.created_at, s.expires_at, s.last_seen_at as last_used, null as scopes, null as max_preset, null as audiences, ${ACCOUNT_COLUMNS}
            from browser_session s join account a on a.id = s.account_id
           where s.token_hash = ? and s.ended_at is null and s.expires_at > now()
             and s.last_seen_at > now() - (? * interval '1 millisecond') and a.disabled_at is null`,
    touch: 'update browser_session set last_seen_at = now() where id = ?',
  },
} satisfies Record<Exclude<CredentialKind, 'oauth'>, Lookup>;

const TOUCH_AFTER_MS = 60_000;

async function resolve(
  em: EntityManager,
  lookup: Lookup,
  params: unknown[],
  onError: (err: unknown) => void,
): Promise<Principal | null> {
  // On every authenticated request: a prepared statement, planned once per connection.
  const [row] = await prepared<Row>(em, lookup.sql, params);
  if (!row) return null;
  if (!row.last_used || Date.now() - new Date(row.last_used).getTime() > TOUCH_AFTER_MS) {
    // Fire-and-forget: a last-used timestamp must never slow down or fail the request it describes.
    bound(em, lookup.touch, [row.id]).catch(onError);
  }
  return {
    kind: lookup.kind,
    accountId: row.account_id,
    email: row.email,
    displayName: row.display_name,
    accountState: row.state,
    credentialId: row.id,
    // Account credentials (browser, CLI) act with the account's whole authority.
    scopes: (row.scopes as Scope[] | null) ?? SCOPES,
    maxPreset: row.max_preset ?? 'accuracy',
    audiences: row.audiences && row.audiences.length ? row.audiences : null,
    issuedAt: new Date(row.created_at),
    expiresAt: row.expires_at ? new Date(row.expires_at) : null,
  };
}

export function resolveApiKey(em: EntityManager, secret: string, onError: (err: unknown) => void) {
  if (!secret.startsWith(API_KEY_PREFIX)) return Promise.resolve(null);
  return resolve(em, lookups.apiKey, [digest(secret)], onError);
}

export function resolveCliToken(em: EntityManager, token: string, onError: (err: unknown) => void) {
  if (!token.startsWith(CLI_TOKEN_PREFIX)) return Promise.resolve(null);
  return resolve(em, lookups.cli, [digest(token)], onError);
}

export function resolveBrowserSession(
  em: EntityManager,
  auth: Config['auth'],
  token: string,
  onError: (err: unknown) => void,
) {
  if (token.length < 20 || token.length > 100) return Promise.resolve(null);
  return resolve(em, lookups.browser, [digest(token), auth.sessionIdleMs], onError);
}
