import type { EntityManager } from '@mikro-orm/postgresql';
import type { AccountState } from '../db/entities/index.ts';
import { bound, prepared } from '../db/sql.ts';
import type { Principal } from '../auth/principal.ts';
import { digest } from '../auth/tokens.ts';
import type { ConnectedAppScope } from './connected-apps.ts';

type Row = {
  aud: string | string[] | null;
  iat: number | null;
  account_id: string;
  email: string;
  display_name: string | null;
  state: AccountState;
  app_id: string;
  scopes: ConnectedAppScope[];
  last_used_at: Date | null;
  expires_at: Date;
};

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
  // On every MCP request, like the API-key lookup: prepared, planned once per connection.
  const [row] = await prepared<Row>(
    em,
    `select p.payload->'aud' as aud, (p.payload->>'iat')::bigint as iat, p.expires_at,
            a.id as account_id, a.email, a.display_name, a.state,
            c.id as app_id, c.scopes, c.last_used_at
       from oauth_payload p
       join account a on a.id = p.account_id
       join oauth_connected_app c on c.account_id = p.account_id and c.client_id = p.client_id and c.revoked_at is null
      where p.kind = 'AccessToken' and p.id_digest = ? and p.expires_at > now() and a.disabled_at is null`,
    [digest(token)],
  );
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
export type ConnectionApp = { id: string; scopes: ConnectedAppScope[]; last_used_at: Date | null };

/** The principal of an OAuth connection (built-in or external tokens alike); records the use. */
export function connectionPrincipal(
  em: EntityManager,
  c: { account: ConnectionAccount; app: ConnectionApp; issuedAtSeconds: number; expiresAt: Date | null; onError: (err: unknown) => void },
): Principal {
  touchConnectedApp(em, c.app.id, c.app.last_used_at, c.onError);
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
function touchConnectedApp(em: EntityManager, appId: string, lastUsedAt: Date | null, onError: (err: unknown) => void) {
  if (lastUsedAt && Date.now() - new Date(lastUsedAt).getTime() < TOUCH_AFTER_MS) return;
  bound(em, 'update oauth_connected_app set last_used_at = now() where id = ?', [appId]).catch(onError);
}
