import type { EntityManager } from '@mikro-orm/postgresql';
import { createRemoteJWKSet, jwtVerify, type JWTVerifyGetKey } from 'jose';
import type { Principal } from '../auth/principal.ts';
import { normalizeEmail } from '../auth/accounts.ts';
import { forbidden, notFound } from '../../platform/errors.ts';
import { connectionPrincipal, type ConnectionAccount, type ConnectionApp } from './access-tokens.ts';
import type { MetadataSource } from './metadata.ts';
import { accountByEmail, linkedAccount, linkIdentity } from './accounts.queries.ts';
import { activeConnection, insertPendingConnection, lastRevocation } from './connected-apps.queries.ts';

type AccountRow = ConnectionAccount;
type AppRow = ConnectionApp;

/**
 * Access tokens of an external identity provider (MCP_AUTH_ISSUER): JWTs verified against the
 * provider's published keys (jwks_uri of its allowlisted metadata), with the configured issuer and an
 * MCP endpoint address as audience. The account is the one an operator linked the token's subject to
 * (`admin account link-external`), else the one whose email the token asserts as verified
 * (`email_verified: true`): a provider that lets anyone sign up with any address cannot hand out
 * someone else's account. The client is the token's client_id (or azp). Its first token for an account
 * asks for a connection, which waits, with no access, until the user allows it in the console
 * (`approvalUrl`; the consent step at Cairn); revoking the connection refuses every token issued
 * before the revocation, and a later token asks again.
 */
export function externalTokenResolver(opts: {
  issuer: string;
  audiences: readonly string[];
  metadata: MetadataSource;
  approvalUrl: string;
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
    if (!clientId) return null;
    const account = await accountOf(em, opts.issuer, claims);
    if (!account) return null;
    const app = await externalConnection(em, account.id, clientId, (claims.iat ?? 0) * 1000);
    if (!app) return null;
    if (app.scopes.length === 0) {
      throw forbidden(`This application is waiting for your approval: open ${opts.approvalUrl} and allow it, then try again.`);
    }
    return connectionPrincipal(em, {
      account,
      app,
      issuedAtSeconds: claims.iat ?? 0,
      expiresAt: claims.exp ? new Date(claims.exp * 1000) : null,
      onError,
    });
  };
}

/** The operator's link of the token's subject, else the account of a verified email; null for neither. */
async function accountOf(em: EntityManager, issuer: string, claims: Record<string, unknown>): Promise<AccountRow | null> {
  const linked = typeof claims.sub === 'string' ? await linkedAccount(em, issuer, claims.sub) : undefined;
  if (linked) return linked;
  // Some providers send the flag as a string.
  const verified = claims.email_verified === true || claims.email_verified === 'true';
  if (typeof claims.email !== 'string' || !verified) return null;
  return (await accountByEmail(em, normalizeEmail(claims.email))) ?? null;
}

/** The client's connection for the account: the active one, or a new pending one (no scopes). */
async function externalConnection(em: EntityManager, accountId: string, clientId: string, issuedAtMs: number): Promise<AppRow | null> {
  const active = await activeConnection(em, accountId, clientId);
  const lastRevoked = await lastRevocation(em, accountId, clientId);
  // A token from before the latest revocation stays refused even after the app reconnects.
  if (lastRevoked && issuedAtMs <= new Date(lastRevoked).getTime()) return null;
  if (active) return active;
  await insertPendingConnection(em, accountId, clientId);
  return (await activeConnection(em, accountId, clientId)) ?? null;
}

/**
 * The operator's explicit mapping: tokens of `issuer` with subject `subject` belong to the account of
 * `email` (linking the subject again moves it). For providers that assert no verified email.
 */
export async function linkExternalIdentity(em: EntityManager, link: { issuer: string; subject: string; email: string }) {
  const row = await linkIdentity(em, link.issuer, link.subject, normalizeEmail(link.email));
  if (!row) throw notFound('No account with this email.');
  return { issuer: link.issuer, subject: link.subject, accountId: row.account_id, linkedAt: new Date(row.created_at).toISOString() };
}
