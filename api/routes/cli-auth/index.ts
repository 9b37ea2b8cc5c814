import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { approveDevice, createDeviceAuthorization, endCliSession, pollDeviceToken, verificationUrl } from '../../../core/auth/device.ts';
import type { RateLimiter } from '../../../core/metering/rate-limit.ts';
import type { Config } from '../../../platform/config.ts';
import {
  CliAuthStatus,
  CliDeviceApprovalRequest,
  CliDeviceApprovalResponse,
  CliDeviceAuthorizationRequest,
  CliDeviceAuthorizationResponse,
  CliDeviceTokenPendingResponse,
  CliDeviceTokenRequest,
  CliLogoutResponse,
  CliSessionResponse,
} from '../../../core/contracts/auth.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { principalOf } from '../../plugins/auth.ts';

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 429: ErrorEnvelope };

type App = Parameters<FastifyPluginAsyncZod>[0];

export const cliAuthRoutes: FastifyPluginAsyncZod<{ config: Config; rateLimiter?: RateLimiter }> = async (app, { config, rateLimiter }) => {
  deviceRoutes(app, config, rateLimiter);
  tokenRoute(app, config);
  cliSessionRoutes(app);
};

/**
 * The device flow's first steps: the CLI asks for a code, the signed-in person approves it. Asking
 * needs no credential, and each code is a row until it expires: limited per client address.
 */
function deviceRoutes(app: App, config: Config, rateLimiter?: RateLimiter) {
  app.post(
    '/v1/auth/cli/device',
    {
      schema: {
        tags: ['sign-in'],
        summary: 'Start CLI device sign-in',
        body: CliDeviceAuthorizationRequest.nullish(),
        response: { 201: CliDeviceAuthorizationResponse, ...errors },
      },
    },
    async (request, reply) => {
      await rateLimiter?.consumeDeviceCode(request.ip);
      const { deviceCode, device } = await createDeviceAuthorization(request.em, config.auth, request.body?.clientName);
      return reply.code(201).send({
        schemaVersion: 'service-cli-device-authorization-v1' as const,
        deviceCode,
        userCode: device.userCode,
        verificationUrl: verificationUrl(config.publicBaseUrl, device.userCode),
        expiresAt: device.expiresAt.toISOString(),
        intervalSeconds: device.intervalSeconds,
      });
    },
  );

  app.post(
    '/v1/auth/cli/device/approve',
    {
      config: { auth: { accept: ['browser'] } },
      schema: {
        tags: ['sign-in'],
        summary: 'Approve a CLI sign-in code (browser session)',
        body: CliDeviceApprovalRequest,
        response: { 200: CliDeviceApprovalResponse, ...errors },
      },
    },
    async (request) => {
      const { userCode, expiresAt } = await approveDevice(request.em, principalOf(request).accountId, request.body.userCode);
      return {
        schemaVersion: 'service-cli-device-approval-v1' as const,
        approved: true as const,
        userCode,
        expiresAt: expiresAt.toISOString(),
      };
    },
  );
}

/** The CLI polls with its device code until the code is approved, then gets its session once. */
function tokenRoute(app: App, config: Config) {
  app.post(
    '/v1/auth/cli/token',
    {
      schema: {
        tags: ['sign-in'],
        summary: 'Poll for (and exchange) an approved device code',
        body: CliDeviceTokenRequest,
        response: { 200: CliSessionResponse, 202: CliDeviceTokenPendingResponse, ...errors },
      },
    },
    async (request, reply) => {
      const result = await pollDeviceToken(request.em, config.auth, request.body.deviceCode);
      if (result.status === 'pending') {
        return reply.code(202).send({
          schemaVersion: 'service-cli-device-token-v1' as const,
          status: 'pending' as const,
          expiresAt: result.expiresAt.toISOString(),
          intervalSeconds: result.intervalSeconds,
        });
      }
      return reply.code(200).send({
        schemaVersion: 'service-cli-session-v1' as const,
        cliSession: { token: result.token, expiresAt: result.session.expiresAt.toISOString() },
        account: { email: result.account.email, displayName: result.account.displayName ?? null },
      });
    },
  );
}

/** The CLI session's status and sign-out, with the CLI token. */
function cliSessionRoutes(app: App) {
  app.get(
    '/v1/auth/cli/session',
    {
      config: { auth: { accept: ['cli'] } },
      schema: { tags: ['sign-in'], summary: 'CLI session status', response: { 200: CliAuthStatus, ...errors } },
    },
    async (request) => {
      const p = principalOf(request);
      return {
        schemaVersion: 'service-cli-auth-v1' as const,
        signedIn: true,
        account: { email: p.email, displayName: p.displayName },
        expiresAt: p.expiresAt!.toISOString(),
      };
    },
  );

  app.delete(
    '/v1/auth/cli/session',
    {
      config: { auth: { accept: ['cli'] } },
      schema: {
        tags: ['sign-in'],
        summary: 'CLI sign-out (API keys stay valid)',
        response: { 200: CliLogoutResponse, ...errors },
      },
    },
    async (request) => {
      await endCliSession(request.em, principalOf(request).credentialId);
      return { schemaVersion: 'service-cli-logout-v1' as const, ok: true };
    },
  );
}
