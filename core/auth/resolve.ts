import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../platform/config.ts';
import { SCOPES, type Scope } from '../contracts/account.ts';
import type { Principal } from './principal.ts';
import { apiKeyByDigest, browserSessionByDigest, cliSessionByDigest, touchCredential, type CredentialRow, type LookupKind } from './resolve.queries.ts';
import { API_KEY_PREFIX, CLI_TOKEN_PREFIX } from '../contracts/auth.ts';
import { digest } from './tokens.ts';

// Credential lookups run on every request: one indexed query each, joined with the account, and a
// last-used write at most once a minute per credential. OAuth access tokens (MCP only) resolve in
// core/oauth/access-tokens.ts, against the connected-app state.

const TOUCH_AFTER_MS = 60_000;

function principalOf(
  em: EntityManager,
  kind: LookupKind,
  row: CredentialRow | undefined,
  onError: (err: unknown) => void,
): Principal | null {
  if (!row) return null;
  if (!row.last_used || Date.now() - new Date(row.last_used).getTime() > TOUCH_AFTER_MS) {
    // Fire-and-forget: a last-used timestamp must never slow down or fail the request it describes.
    touchCredential(em, kind, row.id).catch(onError);
  }
  return {
    kind,
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

export async function resolveApiKey(em: EntityManager, secret: string, onError: (err: unknown) => void) {
  if (!secret.startsWith(API_KEY_PREFIX)) return null;
  return principalOf(em, 'apiKey', await apiKeyByDigest(em, digest(secret)), onError);
}

export async function resolveCliToken(em: EntityManager, token: string, onError: (err: unknown) => void) {
  if (!token.startsWith(CLI_TOKEN_PREFIX)) return null;
  return principalOf(em, 'cli', await cliSessionByDigest(em, digest(token)), onError);
}

export async function resolveBrowserSession(
  em: EntityManager,
  auth: Config['auth'],
  token: string,
  onError: (err: unknown) => void,
) {
  if (token.length < 20 || token.length > 100) return null;
  return principalOf(em, 'browser', await browserSessionByDigest(em, digest(token), auth.sessionIdleMs), onError);
}
