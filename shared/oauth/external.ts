import type { EntityManager } from '@mikro-orm/postgresql';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Principal } from '../auth/principal.ts';
import { normalizeEmail } from '../auth/accounts.ts';
import { bound } from '../db/sql.ts';
import { connectionPrincipal, type ConnectionAccount, type ConnectionApp } from './access-tokens.ts';
import type { ConnectedAppScope } from './connected-apps.ts';
import type { MetadataSource } from './metadata.ts';

type AccountRow = ConnectionAccount;
type AppRow = ConnectionApp;

/**
 * Access tokens of an external identity provider (MCP_AUTH_ISSUER): JWTs verified against the
 * provider's published keys (jwks_uri of its allowlisted metadata), with the configured issuer and an
 * MCP endpoint address as audience. The account is the one whose email the token asserts (and does not
 * deny verifying); the client is the token's client_id (or azp). The first token of a client for an
 * account connects it with the operator's default scopes (MCP_EXTERNAL_SCOPES); revoking the
 * connection refuses every token issued before the revocation, and a later authorization reconnects.
 */
export function externalTokenResolver(opts: {
  issuer: string;
  audiences: readonly string[];
  defaultScopes: readonly ConnectedAppScope[];
  metadata: MetadataSource;
}) {
  let keys: { uri: string; get: JWTVerifyGetKey } | undefined;
  const keySet = async () => {
    const uri = (await opts.metadata()).jwks_uri;
    if (typeof uri !== 'string') throw new Error('the identity provider publishes no jwks_uri');
    if (keys?.uri !== uri) keys = { uri, get: createRemoteJWKSet(new URL(uri)) };
    return keys.get;
  };

  return async (em: EntityManager, token: string, onError: (err: unknown) => void): Promise<Principal | null> => {
    if (token.split('.').length !== 3) return null;
    let claims;
    try {
      ({ payload: claims } = await jwtVerify(token, await keySet(), { issuer: opts.issuer, audience: [...opts.audiences] }));
    } catch {
      return null; // a bad signature, audience, issuer or expiry: simply not a credential here
    }
    const clientId = typeof claims.client_id === 'string' ? claims.client_id : typeof claims.azp === 'string' ? claims.azp : null;
    if (typeof claims.email !== 'string' || claims.email_verified === false || !clientId) return null;
    const [account] = await bound<AccountRow>(
      em,
      `select id, email, display_name, state from account where email_normalized = ? and disabled_at is null`,
      [normalizeEmail(claims.email)],
    );
    if (!account) return null;
    const app = await externalConnection(em, account.id, clientId, (claims.iat ?? 0) * 1000, opts.defaultScopes);
    if (!app) return null;
    return connectionPrincipal(em, {
      account,
      app,
      issuedAtSeconds: claims.iat ?? 0,
      expiresAt: claims.exp ? new Date(claims.exp * 1000) : null,
      onError,
    });
  };
}

async function externalConnection(
  em: EntityManager,
  accountId: string,
  clientId: string,
  issuedAtMs: number,
  defaultScopes: readonly ConnectedAppScope[],
): Promise<AppRow | null> {
  const [active] = await bound<AppRow>(
    em,
    'select id, scopes, last_used_at from oauth_connected_app where account_id = ? and client_id = ? and revoked_at is null',
    [accountId, clientId],
  );
  const [{ revoked_at: lastRevoked } = { revoked_at: null }] = await bound<{ revoked_at: Date | null }>(
    em,
    'select max(revoked_at) as revoked_at from oauth_connected_app where account_id = ? and client_id = ?',
    [accountId, clientId],
  );
  // A token from before the latest revocation stays refused even after the app reconnects.
  if (lastRevoked && issuedAtMs <= new Date(lastRevoked).getTime()) return null;
  if (active) return active;
  await bound(
    em,
    `insert into oauth_connected_app (id, account_id, client_id, client_name, scopes) values (gen_random_uuid(), ?, ?, null, ?::text[])
     on conflict (account_id, client_id) where revoked_at is null do nothing`,
    [accountId, clientId, [...defaultScopes]],
  );
  const [created] = await bound<AppRow>(
    em,
    'select id, scopes, last_used_at from oauth_connected_app where account_id = ? and client_id = ? and revoked_at is null',
    [accountId, clientId],
  );
  return created ?? null;
}
