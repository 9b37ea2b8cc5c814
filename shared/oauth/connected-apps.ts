import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';
import { notFound } from '../errors.ts';

/** The effective scopes a user can give a connected application (spec 5, MCP OAuth). */
export const CONNECTED_APP_SCOPES = ['memory.read', 'memory.write'] as const;
export type ConnectedAppScope = (typeof CONNECTED_APP_SCOPES)[number];

/**
 * What an authorization request that names none of the scopes above asks for (no `scope`, or only
 * OpenID scopes): everything the MCP endpoint offers. The user grants or narrows it at consent.
 */
export const DEFAULT_CONNECTED_APP_SCOPES: readonly ConnectedAppScope[] = CONNECTED_APP_SCOPES;

/** The connected-app scopes among a space-separated scope string, in canonical order. */
export const connectedAppScopes = (scope: string | undefined): ConnectedAppScope[] => {
  const named = new Set((scope ?? '').split(' '));
  return CONNECTED_APP_SCOPES.filter((s) => named.has(s));
};

/** One OAuth client registration the user connected: its tokens carry these scopes. */
export type Registration = {
  id: string;
  clientId: string;
  scopes: ConnectedAppScope[];
  connectedAt: Date;
  authorizedAt: Date;
  lastUsedAt: Date | null;
};

/**
 * A connected application as the user sees it: the registrations that share a client name and
 * redirect URIs (an MCP client registers anew whenever it loses its stored client id), or a single
 * registration without redirect URIs (an external identity provider's client).
 */
export type ConnectedApp = {
  /** The id of its first registration: disconnecting it disconnects them all. */
  id: string;
  clientName: string | null;
  redirectUris: string[];
  scopes: ConnectedAppScope[];
  firstConnectedAt: Date;
  authorizedAt: Date;
  lastUsedAt: Date | null;
  registrations: Registration[];
};

type Row = {
  id: string;
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  scopes: ConnectedAppScope[];
  created_at: Date;
  authorized_at: Date;
  last_used_at: Date | null;
};

const COLUMNS = 'id, client_id, client_name, redirect_uris, scopes, created_at, authorized_at, last_used_at';

const latest = (dates: (Date | null)[]) =>
  dates.reduce<Date | null>((a, b) => (b && (!a || b > a) ? b : a), null);

/** The registration an id names (`named`), and the registrations of the same application as it (`n`, `c`). */
const NAMED = 'select client_id, client_name, redirect_uris from oauth_connected_app where id = ? and account_id = ? and revoked_at is null';
const SAME_APP = `case when n.redirect_uris = '{}' then c.client_id = n.client_id
  else c.client_name is not distinct from n.client_name and c.redirect_uris = n.redirect_uris end`;
const byAge = (rows: Row[]) => rows.sort((a, b) => new Date(a.created_at).getTime() - new Date(b.created_at).getTime() || a.id.localeCompare(b.id));

/** Groups registrations (oldest first) into applications, most recently authorized first. */
function toApps(rows: Row[]): ConnectedApp[] {
  const groups = new Map<string, Row[]>();
  for (const r of rows) {
    const key = r.redirect_uris.length ? JSON.stringify([r.client_name, r.redirect_uris]) : `client ${r.client_id}`;
    groups.set(key, [...(groups.get(key) ?? []), r]);
  }
  const apps = [...groups.values()].map((members): ConnectedApp => {
    const registrations = members.map((r) => ({
      id: r.id,
      clientId: r.client_id,
      scopes: CONNECTED_APP_SCOPES.filter((s) => r.scopes.includes(s)),
      connectedAt: new Date(r.created_at),
      authorizedAt: new Date(r.authorized_at),
      lastUsedAt: r.last_used_at ? new Date(r.last_used_at) : null,
    }));
    const first = registrations[0]!;
    return {
      id: first.id,
      clientName: members[0]!.client_name,
      redirectUris: members[0]!.redirect_uris,
      scopes: CONNECTED_APP_SCOPES.filter((s) => registrations.some((r) => r.scopes.includes(s))),
      firstConnectedAt: first.connectedAt,
      authorizedAt: latest(registrations.map((r) => r.authorizedAt))!,
      lastUsedAt: latest(registrations.map((r) => r.lastUsedAt)),
      registrations,
    };
  });
  return apps.sort((a, b) => b.authorizedAt.getTime() - a.authorizedAt.getTime() || a.id.localeCompare(b.id));
}

/**
 * Connects a client registration, on the exchange of an authorization code (not at consent: a
 * refused, failed or abandoned authorization leaves nothing): it becomes (or stays) a connected
 * application of the account with the scopes the user granted. Concurrent exchanges for the same pair
 * end in one active row.
 */
export async function connectApplication(
  em: EntityManager,
  input: { accountId: string; clientId: string; clientName: string | null; redirectUris: readonly string[]; scopes: readonly ConnectedAppScope[] },
): Promise<void> {
  await bound(
    em,
    `insert into oauth_connected_app (id, account_id, client_id, client_name, redirect_uris, scopes)
     values (?, ?, ?, ?, ?::text[], ?::text[])
     on conflict (account_id, client_id) where revoked_at is null
     do update set scopes = excluded.scopes, client_name = excluded.client_name, redirect_uris = excluded.redirect_uris,
       authorized_at = now()`,
    [randomUUID(), input.accountId, input.clientId, input.clientName, [...input.redirectUris].sort(), [...input.scopes]],
  );
}

/**
 * The user's consent given (or changed) in the console: the application gets exactly these scopes. An
 * external identity provider's application waits with no scopes until this (shared/oauth/external.ts).
 * Another account's, a revoked or an unknown id is 404.
 */
export async function setConnectedAppScopes(
  em: EntityManager,
  accountId: string,
  id: string,
  scopes: readonly ConnectedAppScope[],
): Promise<ConnectedApp> {
  const rows = await bound<Row>(
    em,
    `with named as (${NAMED})
     update oauth_connected_app c set scopes = ?::text[], authorized_at = now() from named n
      where c.account_id = ? and c.revoked_at is null and ${SAME_APP}
      returning ${COLUMNS.split(', ').map((c) => `c.${c}`).join(', ')}`,
    [id, accountId, [...scopes], accountId],
  );
  if (!rows.length) throw notFound('No such connected application.');
  return toApps(byAge(rows))[0]!;
}

/** Active connected applications of an account, most recently authorized first. */
export async function listConnectedApps(em: EntityManager, accountId: string): Promise<ConnectedApp[]> {
  const rows = await bound<Row>(
    em,
    `select ${COLUMNS} from oauth_connected_app where account_id = ? and revoked_at is null order by created_at, id`,
    [accountId],
  );
  return toApps(rows);
}

/**
 * Disconnects an application (any of its registrations' ids names it): every registration of the
 * application is marked revoked and every grant, code and token those clients hold for this account
 * is deleted in the same transaction, so their next MCP request is refused. The browser session and
 * the account's API keys are not touched. Another account's id is 404.
 */
export async function revokeConnectedApp(em: EntityManager, accountId: string, id: string): Promise<ConnectedApp> {
  return em.transactional(async (tx) => {
    const rows = await bound<Row>(
      tx,
      `with named as (${NAMED})
       update oauth_connected_app c set revoked_at = now() from named n
        where c.account_id = ? and c.revoked_at is null and ${SAME_APP}
        returning ${COLUMNS.split(', ').map((c) => `c.${c}`).join(', ')}`,
      [id, accountId, accountId],
    );
    if (!rows.length) throw notFound('No such connected application.');
    await bound(tx, 'delete from oauth_payload where account_id = ? and client_id = any(?::text[])', [accountId, rows.map((r) => r.client_id)]);
    return toApps(byAge(rows))[0]!;
  });
}
