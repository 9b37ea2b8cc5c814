import type { EntityManager } from '@mikro-orm/postgresql';
import type { AccountState } from '../../platform/db/entities/index.ts';
import type { Principal } from '../auth/principal.ts';
import { digest } from '../auth/tokens.ts';
import { touchConnectedApp, type ConnectionRow } from './connected-apps.queries.ts';
import { accessTokenByDigest } from './payload.queries.ts';

const TOUCH_AFTER_MS = 60_000;

/**
 * Resolves a built-in authorization server's access token on an MCP request: the token must exist
 * (stored by digest), be unexpired, carry one of the MCP endpoint's addresses as its audience, and
 * belong to an active connected application, whose current scopes are the effective ones. One indexed
 * query; revoking the application deletes the token, so the next request fails.
 */
export async function resolveOauthAccessToken(
  em: EntityManager,
  token: string,
  audiences: readonly string[],
  onError: (err: unknown) => void,
): Promise<Principal | null> {
  if (token.length < 20 || token.length > 512) return null;
  const row = await accessTokenByDigest(em, digest(token));
  if (!row) return null;
  const aud = Array.isArray(row.aud) ? row.aud : row.aud ? [row.aud] : [];
  if (!aud.some((a) => audiences.includes(a))) return null;
  return connectionPrincipal(em, {
    account: { id: row.account_id, email: row.email, display_name: row.display_name, state: row.state },
    app: { id: row.app_id, scopes: row.scopes, last_used_at: row.last_used_at },
    issuedAtSeconds: Number(row.iat ?? 0),
    expiresAt: new Date(row.expires_at),
    onError,
  });
}

export type ConnectionAccount = { id: string; email: string; display_name: string | null; state: AccountState };
export type ConnectionApp = ConnectionRow;

/** The principal of an OAuth connection (built-in or external tokens alike); records the use. */
export function connectionPrincipal(
  em: EntityManager,
  c: { account: ConnectionAccount; app: ConnectionApp; issuedAtSeconds: number; expiresAt: Date | null; onError: (err: unknown) => void },
): Principal {
  recordUse(em, c.app.id, c.app.last_used_at, c.onError);
  return {
    kind: 'oauth',
    accountId: c.account.id,
    email: c.account.email,
    displayName: c.account.display_name,
    accountState: c.account.state,
    credentialId: c.app.id,
    // Exactly what the user granted (spec 4.6, 5): never `query`, so a connected application neither
    // searches ingested sources nor spends query credits.
    scopes: [...c.app.scopes],
    maxPreset: 'accuracy',
    audiences: null,
    issuedAt: new Date(c.issuedAtSeconds * 1000),
    expiresAt: c.expiresAt,
  };
}

/** Fire-and-forget, at most once a minute: "last used" must never slow down or fail a request. */
function recordUse(em: EntityManager, appId: string, lastUsedAt: Date | null, onError: (err: unknown) => void) {
  if (lastUsedAt && Date.now() - new Date(lastUsedAt).getTime() < TOUCH_AFTER_MS) return;
  touchConnectedApp(em, appId).catch(onError);
}
