import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { changePassword } from '../../../core/auth/sessions.ts';
import type { Config } from '../../../platform/config.ts';
import { PasswordChangeRequest, PasswordChangeResponse } from '../../../core/contracts/auth.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { principalOf } from '../../plugins/auth.ts';

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 429: ErrorEnvelope };

/** Password change for the signed-in browser session (CSRF, as every browser write). */
export const passwordRoutes: FastifyPluginAsyncZod<{ config: Config }> = async (app, { config }) => {
  app.post(
    '/v1/account/password',
    {
      config: { auth: { accept: ['browser'] } },
      schema: {
        tags: ['account'],
        summary: 'Change the password (the current one is required); every other browser and CLI session ends',
        body: PasswordChangeRequest,
        response: { 200: PasswordChangeResponse, ...errors },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const ended = await changePassword(request.em, config.auth, {
        accountId: p.accountId,
        keepSessionId: p.credentialId,
        currentPassword: request.body.currentPassword,
        newPassword: request.body.newPassword,
        clientAddress: request.ip,
      });
      return { schemaVersion: 'service-password-change-v1' as const, changed: true as const, ...ended };
    },
  );
};
