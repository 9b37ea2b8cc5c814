import { z } from 'zod';
import { DateTime } from './auth.ts';

/** The effective scopes a user can give a connected application (spec 5, MCP OAuth). */
export const CONNECTED_APP_SCOPES = ['memory.read', 'memory.write'] as const;
export type ConnectedAppScope = (typeof CONNECTED_APP_SCOPES)[number];

const Scopes = z.array(z.enum(CONNECTED_APP_SCOPES));

export const ConnectedAppRegistration = z
  .strictObject({
    clientId: z.string().describe('The OAuth client id of this registration.'),
    scopes: Scopes.describe('Effective scopes of this registration\'s tokens, chosen at consent, applied on every MCP request.'),
    connectedAt: DateTime.describe('When this registration first exchanged an authorization code.'),
    authorizedAt: DateTime.describe('When the user last consented for this registration.'),
    lastUsedAt: DateTime.nullable(),
  })
  .meta({ id: 'ConnectedAppRegistration' });

/**
 * A connected application: an MCP client the user authorized through OAuth (spec 5, MCP OAuth),
 * with all its registrations of the same name and redirect URIs.
 */
export const ConnectedAppRecord = z
  .strictObject({
    id: z.uuid().describe('Names the application (the id of its first registration); disconnecting it disconnects every registration.'),
    clientName: z.string().nullable().describe('The name the application registered with, when it gave one.'),
    redirectUris: z.array(z.string()).describe('Where its authorizations return to.'),
    scopes: Scopes.describe('Every scope one of its registrations holds.'),
    status: z
      .enum(['active', 'pending'])
      .describe('`pending`: an application of an external identity provider waiting for the user to allow it (no scopes yet).'),
    firstConnectedAt: DateTime,
    authorizedAt: DateTime.describe('When the user last consented.'),
    lastUsedAt: DateTime.nullable(),
    registrations: z.array(ConnectedAppRegistration).describe('Oldest first.'),
  })
  .meta({ id: 'ConnectedAppRecord' });

export const ConnectedAppListResponse = z
  .strictObject({ schemaVersion: z.literal('service-connected-app-list-v2'), connectedApps: z.array(ConnectedAppRecord) })
  .meta({ id: 'ConnectedAppListResponse' });

export const ConnectedAppResponse = z
  .strictObject({ schemaVersion: z.literal('service-connected-app-v2'), connectedApp: ConnectedAppRecord })
  .meta({ id: 'ConnectedAppResponse' });

export const ConnectedAppIdParams = z.strictObject({ connectedAppId: z.uuid() });

export const ConnectedAppScopesRequest = z
  .strictObject({
    scopes: Scopes
      .min(1)
      .max(CONNECTED_APP_SCOPES.length)
      .refine((s) => new Set(s).size === s.length, 'scopes must not repeat')
      .describe('The access the application gets: memory.read and/or memory.write.'),
  })
  .meta({ id: 'ConnectedAppScopesRequest' });
