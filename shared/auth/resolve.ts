import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { SCOPES, type Preset, type Scope } from '../contracts/account.ts';
import type { AccountState } from '../db/entities/index.ts';
import type { Principal } from './principal.ts';
import { API_KEY_PREFIX, CLI_TOKEN_PREFIX, digest } from './tokens.ts';

// Credential lookups run on every request: one indexed query each (digest -> unique index), joined with
// the account, and a last-used write at most once a minute per credential.

type AccountRow = { account_id: string; email: string; display_name: string | null; state: AccountState };

/** Account credentials act with every scope except what only API keys carry for native memory. */
const ACCOUNT_SCOPES: readonly Scope[] = SCOPES;
const TOUCH_AFTER_MS = 60_000;

function touch(em: EntityManager, sql: string, id: string, onError: (err: unknown) => void) {
  // Fire-and-forget: a last-used timestamp must never slow down or fail the request it describes.
  em.getConnection().execute(sql, [id]).catch(onError);
}

export async function resolveApiKey(
  em: EntityManager,
  secret: string,
  onError: (err: unknown) => void,
): Promise<Principal | null> {
  if (!secret.startsWith(API_KEY_PREFIX)) return null;
  const [row] = await em.getConnection().execute<(AccountRow & {
    id: string; scopes: string[]; max_preset: Preset; created_at: Date; last_used_at: Date | null;
  })[]>(
    `select k.id, k.scopes, k.max_preset, k.created_at, k.last_used_at,
            a.id as account_id, a.email, a.display_name, a.state
       from api_key k join account a on a.id = k.account_id
      where k.secret_hash = ? and k.revoked_at is null and a.disabled_at is null`,
    [digest(secret)],
  );
  if (!row) return null;
  if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > TOUCH_AFTER_MS) {
    touch(em, 'update api_key set last_used_at = now() where id = ?', row.id, onError);
  }
  return {
    kind: 'apiKey',
    accountId: row.account_id,
    email: row.email,
    displayName: row.display_name,
    accountState: row.state,
    credentialId: row.id,
    scopes: row.scopes as Scope[],
    maxPreset: row.max_preset,
    issuedAt: new Date(row.created_at),
    expiresAt: null,
  };
}

export async function resolveCliToken(
  em: EntityManager,
  token: string,
  onError: (err: unknown) => void,
): Promise<Principal | null> {
  if (!token.startsWith(CLI_TOKEN_PREFIX)) return null;
  const [row] = await em.getConnection().execute<(AccountRow & {
    id: string; created_at: Date; expires_at: Date; last_used_at: Date | null;
  })[]>(
    `select s.id, s.created_at, s.expires_at, s.last_used_at,
            a.id as account_id, a.email, a.display_name, a.state
       from cli_session s join account a on a.id = s.account_id
      where s.token_hash = ? and s.revoked_at is null and s.expires_at > now() and a.disabled_at is null`,
    [digest(token)],
  );
  if (!row) return null;
  if (!row.last_used_at || Date.now() - new Date(row.last_used_at).getTime() > TOUCH_AFTER_MS) {
    touch(em, 'update cli_session set last_used_at = now() where id = ?', row.id, onError);
  }
  return {
    kind: 'cli',
    accountId: row.account_id,
    email: row.email,
    displayName: row.display_name,
    accountState: row.state,
    credentialId: row.id,
    scopes: ACCOUNT_SCOPES,
    maxPreset: 'accuracy',
    issuedAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}

export async function resolveBrowserSession(
  em: EntityManager,
  auth: Config['auth'],
  token: string,
  onError: (err: unknown) => void,
): Promise<Principal | null> {
  if (token.length < 20 || token.length > 100) return null;
  const [row] = await em.getConnection().execute<(AccountRow & {
    id: string; created_at: Date; expires_at: Date; last_seen_at: Date;
  })[]>(
    `select s.id, s.created_at, s.expires_at, s.last_seen_at,
            a.id as account_id, a.email, a.display_name, a.state
       from browser_session s join account a on a.id = s.account_id
      where s.token_hash = ? and s.ended_at is null and s.expires_at > now()
        and s.last_seen_at > now() - (? * interval '1 millisecond') and a.disabled_at is null`,
    [digest(token), auth.sessionIdleMs],
  );
  if (!row) return null;
  if (Date.now() - new Date(row.last_seen_at).getTime() > TOUCH_AFTER_MS) {
    touch(em, 'update browser_session set last_seen_at = now() where id = ?', row.id, onError);
  }
  return {
    kind: 'browser',
    accountId: row.account_id,
    email: row.email,
    displayName: row.display_name,
    accountState: row.state,
    credentialId: row.id,
    scopes: ACCOUNT_SCOPES,
    maxPreset: 'accuracy',
    issuedAt: new Date(row.created_at),
    expiresAt: new Date(row.expires_at),
  };
}
