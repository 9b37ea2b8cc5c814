import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql, type Sql } from '../../platform/db/sql.ts';
import type { ConnectedAppScope } from '../contracts/oauth.ts';

// The connected applications' statements (oauth_connected_app: one row per client registration an
// account connected); what an application is and who may change it is in connected-apps.ts.

export type RegistrationRow = {
  id: string;
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  scopes: ConnectedAppScope[];
  created_at: Date;
  authorized_at: Date;
  last_used_at: Date | null;
};

/** The connection state a token's principal needs. */
export type ConnectionRow = { id: string; scopes: ConnectedAppScope[]; last_used_at: Date | null };

const COLUMNS = ['id', 'client_id', 'client_name', 'redirect_uris', 'scopes', 'created_at', 'authorized_at', 'last_used_at'];

/** The registration an id names (`named`), and the registrations of the same application as it (`n`, `c`). */
const named = (accountId: string, id: string) =>
  sql`select client_id, client_name, redirect_uris from oauth_connected_app where id = ${id} and account_id = ${accountId} and revoked_at is null`;
const SAME_APP = sql.raw(`case when n.redirect_uris = '{}' then c.client_id = n.client_id
  else c.client_name is not distinct from n.client_name and c.redirect_uris = n.redirect_uris end`);

/** Upserts the account's active registration of a client: a new row, or new scopes and names for the one there. */
export async function upsertConnectedApp(
  em: EntityManager,
  r: { id: string; accountId: string; clientId: string; clientName: string | null; redirectUris: string[]; scopes: ConnectedAppScope[] },
): Promise<void> {
  await bound(em, sql`insert into oauth_connected_app (id, account_id, client_id, client_name, redirect_uris, scopes)
    values (${r.id}, ${r.accountId}, ${r.clientId}, ${r.clientName}, ${r.redirectUris}::text[], ${r.scopes}::text[])
    on conflict (account_id, client_id) where revoked_at is null
    do update set scopes = excluded.scopes, client_name = excluded.client_name, redirect_uris = excluded.redirect_uris,
      authorized_at = now()`);
}

/** Updates every active registration of the application `id` names; the rows changed. */
const updateApplication = (em: EntityManager, accountId: string, id: string, set: Sql) =>
  bound<RegistrationRow>(em, sql`with named as (${named(accountId, id)})
    update oauth_connected_app c set ${set} from named n
     where c.account_id = ${accountId} and c.revoked_at is null and ${SAME_APP}
     returning ${sql.raw(COLUMNS.map((c) => `c.${c}`).join(', '))}`);

export const setApplicationScopes = (em: EntityManager, accountId: string, id: string, scopes: ConnectedAppScope[]) =>
  updateApplication(em, accountId, id, sql`scopes = ${scopes}::text[], authorized_at = now()`);

export const revokeApplication = (em: EntityManager, accountId: string, id: string) =>
  updateApplication(em, accountId, id, sql`revoked_at = now()`);

/** The account's active registrations, oldest first. */
export async function activeRegistrations(em: EntityManager, accountId: string) {
  return bound<RegistrationRow>(em, sql`select ${sql.raw(COLUMNS.join(', '))} from oauth_connected_app
    where account_id = ${accountId} and revoked_at is null order by created_at, id`);
}

export async function touchConnectedApp(em: EntityManager, appId: string): Promise<void> {
  await bound(em, sql`update oauth_connected_app set last_used_at = now() where id = ${appId}`);
}

/** The account's active registration of a client. */
export async function activeConnection(em: EntityManager, accountId: string, clientId: string): Promise<ConnectionRow | undefined> {
  const [row] = await bound<ConnectionRow>(em, sql`select id, scopes, last_used_at from oauth_connected_app
    where account_id = ${accountId} and client_id = ${clientId} and revoked_at is null`);
  return row;
}

/** When the account last revoked a registration of the client; null if never. */
export async function lastRevocation(em: EntityManager, accountId: string, clientId: string): Promise<Date | null> {
  const [row] = await bound<{ revoked_at: Date | null }>(em,
    sql`select max(revoked_at) as revoked_at from oauth_connected_app where account_id = ${accountId} and client_id = ${clientId}`);
  return row?.revoked_at ?? null;
}

/** A pending registration (no scopes, no name) of the client, unless an active one exists. */
export async function insertPendingConnection(em: EntityManager, accountId: string, clientId: string): Promise<void> {
  await bound(em, sql`insert into oauth_connected_app (id, account_id, client_id, client_name, scopes)
    values (gen_random_uuid(), ${accountId}, ${clientId}, null, '{}')
    on conflict (account_id, client_id) where revoked_at is null do nothing`);
}
