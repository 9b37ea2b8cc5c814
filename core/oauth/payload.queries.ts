import type { EntityManager } from '@mikro-orm/postgresql';
import type { AdapterPayload } from 'oidc-provider';
import type { AccountState } from '../../platform/db/entities/index.ts';
import { bound, prepared, sql } from '../../platform/db/sql.ts';
import type { ConnectedAppScope } from '../contracts/oauth.ts';

// The authorization server's stored models (oauth_payload: clients, grants, codes, tokens, sessions),
// keyed by kind and the digest of the instance id; adapter.ts decides what is stored.

export type PayloadRow = {
  kind: string;
  idDigest: string;
  /** The payload as JSON text. */
  payload: string;
  accountId: string | null;
  clientId: string | null;
  grantId: string | null;
  uid: string | null;
  expiresAt: Date | null;
};

export async function upsertPayload(em: EntityManager, r: PayloadRow): Promise<void> {
  await bound(em, sql`insert into oauth_payload (kind, id_digest, payload, account_id, client_id, grant_id, uid, expires_at)
    values (${r.kind}, ${r.idDigest}, ${r.payload}::jsonb, ${r.accountId}, ${r.clientId}, ${r.grantId}, ${r.uid}, ${r.expiresAt})
    on conflict (kind, id_digest) do update set payload = excluded.payload, account_id = excluded.account_id,
      client_id = excluded.client_id, grant_id = excluded.grant_id, uid = excluded.uid, expires_at = excluded.expires_at`);
}

/** A client registration (one that expires) lives at least until `expiresAt`. */
export async function extendClientPayload(em: EntityManager, clientIdDigest: string, expiresAt: Date): Promise<void> {
  await bound(em, sql`update oauth_payload set expires_at = greatest(expires_at, ${expiresAt})
    where kind = 'Client' and id_digest = ${clientIdDigest} and expires_at is not null`);
}

/** The unexpired payload of a kind by the digest of its id, or by its uid. */
export async function findPayload(em: EntityManager, kind: string, by: 'id_digest' | 'uid', value: string) {
  const [row] = await bound<{ payload: AdapterPayload; consumed_at: Date | null }>(em, sql`select payload, consumed_at from oauth_payload
    where kind = ${kind} and ${sql.raw(by)} = ${value} and (expires_at is null or expires_at > now())`);
  return row;
}

export async function consumePayload(em: EntityManager, kind: string, idDigest: string): Promise<void> {
  await bound(em, sql`update oauth_payload set consumed_at = now() where kind = ${kind} and id_digest = ${idDigest}`);
}

export async function deletePayload(em: EntityManager, kind: string, idDigest: string): Promise<void> {
  await bound(em, sql`delete from oauth_payload where kind = ${kind} and id_digest = ${idDigest}`);
}

/** Every model of a grant, whatever its kind. */
export async function deleteGrantPayloads(em: EntityManager, grantId: string): Promise<void> {
  await bound(em, sql`delete from oauth_payload where grant_id = ${grantId}`);
}

export async function deleteExpiredPayloads(em: EntityManager, kind: string): Promise<void> {
  await bound(em, sql`delete from oauth_payload where kind = ${kind} and expires_at < now()`);
}

/** Every grant, code and token the clients hold for the account. */
export async function deleteClientPayloads(em: EntityManager, accountId: string, clientIds: string[]): Promise<void> {
  await bound(em, sql`delete from oauth_payload where account_id = ${accountId} and client_id = any(${clientIds}::text[])`);
}

export type AccessTokenRow = {
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

/**
 * The unexpired access token with this digest, of an enabled account, with its client's active
 * connected application. On every MCP request, like the API-key lookup: prepared, planned once per
 * connection.
 */
export async function accessTokenByDigest(em: EntityManager, tokenDigest: string): Promise<AccessTokenRow | undefined> {
  const [row] = await prepared<AccessTokenRow>(
    em,
    sql`select p.payload->'aud' as aud, (p.payload->>'iat')::bigint as iat, p.expires_at,
            a.id as account_id, a.email, a.display_name, a.state,
            c.id as app_id, c.scopes, c.last_used_at
       from oauth_payload p
       join account a on a.id = p.account_id
       join oauth_connected_app c on c.account_id = p.account_id and c.client_id = p.client_id and c.revoked_at is null
      where p.kind = 'AccessToken' and p.id_digest = ${tokenDigest} and p.expires_at > now() and a.disabled_at is null`,
  );
  return row;
}
