import { z } from 'zod';
import { CONNECTED_APP_SCOPES, type ConnectedApp } from '../oauth/connected-apps.ts';
import { DateTime } from './auth.ts';

/** A connected application: an MCP client the user authorized through OAuth (spec 5, MCP OAuth). */
export const ConnectedAppRecord = z
  .strictObject({
    id: z.uuid(),
    clientId: z.string().describe('The OAuth client id the application registered with.'),
    clientName: z.string().nullable().describe('The name the application registered with, when it gave one.'),
    scopes: z.array(z.enum(CONNECTED_APP_SCOPES)).describe('Effective scopes chosen at consent, applied on every MCP request.'),
    status: z
      .enum(['active', 'pending'])
      .describe('`pending`: an application of an external identity provider waiting for the user to allow it (no scopes yet).'),
    createdAt: DateTime,
    authorizedAt: DateTime.describe('When the user last consented.'),
    lastUsedAt: DateTime.nullable(),
  })
  .meta({ id: 'ConnectedAppRecord' });

export const ConnectedAppListResponse = z
  .strictObject({ schemaVersion: z.literal('service-connected-app-list-v1'), connectedApps: z.array(ConnectedAppRecord) })
  .meta({ id: 'ConnectedAppListResponse' });

export const ConnectedAppResponse = z
  .strictObject({ schemaVersion: z.literal('service-connected-app-v1'), connectedApp: ConnectedAppRecord })
  .meta({ id: 'ConnectedAppResponse' });

export const ConnectedAppIdParams = z.strictObject({ connectedAppId: z.uuid() });

export const ConnectedAppScopesRequest = z
  .strictObject({
    scopes: z
      .array(z.enum(CONNECTED_APP_SCOPES))
      .min(1)
      .max(CONNECTED_APP_SCOPES.length)
      .refine((s) => new Set(s).size === s.length, 'scopes must not repeat')
      .describe('The access the application gets: memory.read and/or memory.write.'),
  })
  .meta({ id: 'ConnectedAppScopesRequest' });

export const connectedAppRecord = (a: ConnectedApp): z.infer<typeof ConnectedAppRecord> => ({
  id: a.id,
  clientId: a.clientId,
  clientName: a.clientName,
  scopes: a.scopes,
  status: a.scopes.length ? 'active' : 'pending',
  createdAt: a.createdAt.toISOString(),
  authorizedAt: a.authorizedAt.toISOString(),
  lastUsedAt: a.lastUsedAt?.toISOString() ?? null,
});
