import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';
import { notFound } from '../errors.ts';

/** The effective scopes a user can give a connected application (spec 5, MCP OAuth). */
export const CONNECTED_APP_SCOPES = ['memory.read', 'memory.write'] as const;
export type ConnectedAppScope = (typeof CONNECTED_APP_SCOPES)[number];

export type ConnectedApp = {
  id: string;
  clientId: string;
  clientName: string | null;
  scopes: ConnectedAppScope[];
  createdAt: Date;
  authorizedAt: Date;
  lastUsedAt: Date | null;
};

type Row = {
  id: string;
  client_id: string;
  client_name: string | null;
  scopes: ConnectedAppScope[];
  created_at: Date;
  authorized_at: Date;
  last_used_at: Date | null;
};

const COLUMNS = 'id, client_id, client_name, scopes, created_at, authorized_at, last_used_at';

const toApp = (r: Row): ConnectedApp => ({
  id: r.id,
  clientId: r.client_id,
  clientName: r.client_name,
  scopes: CONNECTED_APP_SCOPES.filter((s) => r.scopes.includes(s)),
  createdAt: new Date(r.created_at),
  authorizedAt: new Date(r.authorized_at),
  lastUsedAt: r.last_used_at ? new Date(r.last_used_at) : null,
});

/**
 * Records the user's consent: the client becomes (or stays) a connected application of the account
 * with exactly the chosen scopes. Concurrent consents for the same pair end in one active row.
 */
export async function authorizeConnectedApp(
  em: EntityManager,
  input: { accountId: string; clientId: string; clientName: string | null; scopes: readonly ConnectedAppScope[] },
): Promise<ConnectedApp> {
  const [row] = await bound<Row>(
    em,
    `insert into oauth_connected_app (id, account_id, client_id, client_name, scopes)
     values (?, ?, ?, ?, ?::text[])
     on conflict (account_id, client_id) where revoked_at is null
     do update set scopes = excluded.scopes, client_name = excluded.client_name, authorized_at = now()
     returning ${COLUMNS}`,
    [randomUUID(), input.accountId, input.clientId, input.clientName, [...input.scopes]],
  );
  return toApp(row!);
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
  const [row] = await bound<Row>(
    em,
    `update oauth_connected_app set scopes = ?::text[], authorized_at = now()
      where id = ? and account_id = ? and revoked_at is null returning ${COLUMNS}`,
    [[...scopes], id, accountId],
  );
  if (!row) throw notFound('No such connected application.');
  return toApp(row);
}

/** Active connected applications of an account, most recently authorized first. */
export async function listConnectedApps(em: EntityManager, accountId: string): Promise<ConnectedApp[]> {
  const rows = await bound<Row>(
    em,
    `select ${COLUMNS} from oauth_connected_app where account_id = ? and revoked_at is null
      order by authorized_at desc, id`,
    [accountId],
  );
  return rows.map(toApp);
}

/**
 * Disconnects an application: its row is marked revoked and every grant, code and token the client
 * holds for this account is deleted in the same transaction, so its next MCP request is refused. The
 * browser session and the account's API keys are not touched. Another account's id is 404.
 */
export async function revokeConnectedApp(em: EntityManager, accountId: string, id: string): Promise<ConnectedApp> {
  return em.transactional(async (tx) => {
    const [row] = await bound<Row>(
      tx,
      `update oauth_connected_app set revoked_at = now()
        where id = ? and account_id = ? and revoked_at is null returning ${COLUMNS}`,
      [id, accountId],
    );
    if (!row) throw notFound('No such connected application.');
    await bound(tx, 'delete from oauth_payload where account_id = ? and client_id = ?', [accountId, row.client_id]);
    return toApp(row);
  });
}
