import { randomUUID } from 'node:crypto';
import type { z } from 'zod';
import type { EntityManager } from '@mikro-orm/postgresql';
import { notFound } from '../../platform/errors.ts';
import {
  activeRegistrations,
  revokeApplication,
  setApplicationScopes,
  upsertConnectedApp,
  type RegistrationRow,
} from './connected-apps.queries.ts';
import { deleteClientPayloads } from './payload.queries.ts';
import { CONNECTED_APP_SCOPES, type ConnectedAppRecord, type ConnectedAppScope } from '../contracts/oauth.ts';

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

const latest = (dates: (Date | null)[]) =>
  dates.reduce<Date | null>((a, b) => (b && (!a || b > a) ? b : a), null);

const byAge = (rows: RegistrationRow[]) => rows.sort((a, b) => new Date(a.created_at).getTime() - new Date(b.created_at).getTime() || a.id.localeCompare(b.id));

/** Groups registrations (oldest first) into applications, most recently authorized first. */
function toApps(rows: RegistrationRow[]): ConnectedApp[] {
  const groups = new Map<string, RegistrationRow[]>();
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
  await upsertConnectedApp(em, {
    id: randomUUID(),
    accountId: input.accountId,
    clientId: input.clientId,
    clientName: input.clientName,
    redirectUris: [...input.redirectUris].sort(),
    scopes: [...input.scopes],
  });
}

/**
 * The user's consent given (or changed) in the console: the application gets exactly these scopes. An
 * external identity provider's application waits with no scopes until this (core/oauth/external.ts).
 * Another account's, a revoked or an unknown id is 404.
 */
export async function setConnectedAppScopes(
  em: EntityManager,
  accountId: string,
  id: string,
  scopes: readonly ConnectedAppScope[],
): Promise<ConnectedApp> {
  const rows = await setApplicationScopes(em, accountId, id, [...scopes]);
  if (!rows.length) throw notFound('No such connected application.');
  return toApps(byAge(rows))[0]!;
}

/** Active connected applications of an account, most recently authorized first. */
export async function listConnectedApps(em: EntityManager, accountId: string): Promise<ConnectedApp[]> {
  return toApps(await activeRegistrations(em, accountId));
}

/**
 * Disconnects an application (any of its registrations' ids names it): every registration of the
 * application is marked revoked and every grant, code and token those clients hold for this account
 * is deleted in the same transaction, so their next MCP request is refused. The browser session and
 * the account's API keys are not touched. Another account's id is 404.
 */
export async function revokeConnectedApp(em: EntityManager, accountId: string, id: string): Promise<ConnectedApp> {
  return em.transactional(async (tx) => {
    const rows = await revokeApplication(tx, accountId, id);
    if (!rows.length) throw notFound('No such connected application.');
    await deleteClientPayloads(tx, accountId, rows.map((r) => r.client_id));
    return toApps(byAge(rows))[0]!;
  });
}

const iso = (d: Date | null) => d?.toISOString() ?? null;

export const connectedAppRecord = (a: ConnectedApp): z.infer<typeof ConnectedAppRecord> => ({
  id: a.id,
  clientName: a.clientName,
  redirectUris: a.redirectUris,
  scopes: a.scopes,
  status: a.scopes.length ? 'active' : 'pending',
  firstConnectedAt: a.firstConnectedAt.toISOString(),
  authorizedAt: a.authorizedAt.toISOString(),
  lastUsedAt: iso(a.lastUsedAt),
  registrations: a.registrations.map((r) => ({
    clientId: r.clientId,
    scopes: r.scopes,
    connectedAt: r.connectedAt.toISOString(),
    authorizedAt: r.authorizedAt.toISOString(),
    lastUsedAt: iso(r.lastUsedAt),
  })),
});
