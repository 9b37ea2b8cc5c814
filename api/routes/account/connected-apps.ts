import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import {
  ConnectedAppIdParams,
  ConnectedAppListResponse,
  ConnectedAppResponse,
  ConnectedAppScopesRequest,
} from '../../../core/contracts/oauth.ts';
import { connectedAppRecord, listConnectedApps, revokeConnectedApp, setConnectedAppScopes } from '../../../core/oauth/connected-apps.ts';
import { principalOf } from '../../plugins/auth.ts';
import { ACCOUNT_MANAGEMENT } from './api-keys.ts';

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };
const tags = ['account'];

/**
 * Connected applications (spec 5, MCP OAuth): the MCP clients the user authorized, listed, re-scoped
 * (the consent step for an external identity provider's applications) and revocable by the user
 * (browser session with csrf on writes, or CLI session). Revoking ends that application's access on its
 * next request; the browser session and API keys are untouched.
 */
export const connectedAppRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/v1/account/connected-apps',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: { tags, summary: 'List connected MCP applications', response: { 200: ConnectedAppListResponse, ...errors } },
    },
    async (request) => ({
      schemaVersion: 'service-connected-app-list-v2' as const,
      connectedApps: (await listConnectedApps(request.em, principalOf(request).accountId)).map(connectedAppRecord),
    }),
  );

  app.put(
    '/v1/account/connected-apps/:connectedAppId',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags,
        summary: "Allow a pending MCP application, or change an application's access",
        params: ConnectedAppIdParams,
        body: ConnectedAppScopesRequest,
        response: { 200: ConnectedAppResponse, ...errors },
      },
    },
    async (request) => ({
      schemaVersion: 'service-connected-app-v2' as const,
      connectedApp: connectedAppRecord(
        await setConnectedAppScopes(request.em, principalOf(request).accountId, request.params.connectedAppId, request.body.scopes),
      ),
    }),
  );

  app.delete(
    '/v1/account/connected-apps/:connectedAppId',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags,
        summary: 'Disconnect an MCP application (its tokens stop working at once)',
        params: ConnectedAppIdParams,
        response: { 200: ConnectedAppResponse, ...errors },
      },
    },
    async (request) => ({
      schemaVersion: 'service-connected-app-v2' as const,
      connectedApp: connectedAppRecord(await revokeConnectedApp(request.em, principalOf(request).accountId, request.params.connectedAppId)),
    }),
  );
};
