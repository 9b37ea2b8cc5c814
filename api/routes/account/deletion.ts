import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { markDeletionPending } from '../../../core/auth/account-deletion.ts';
import type { Config } from '../../../platform/config.ts';
import { AccountDeletionRequest, AccountDeletionResponse } from '../../../core/contracts/account.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { AppError, validationError } from '../../../platform/errors.ts';
import type { TemporalClientHandle } from '../../../temporal/client.ts';
import { startAccountDeletion } from '../../../temporal/starts.ts';
import { clearSessionCookie, principalOf } from '../../plugins/auth.ts';

const pendingError = (why: string) =>
  new AppError(
    503,
    'account_deletion_pending',
    `Account deletion ${why}. The account is deletion_pending: retry DELETE /v1/account, or sign out.`,
  );

export const deletionRoutes: FastifyPluginAsyncZod<{ config: Config; temporal: TemporalClientHandle }> = async (
  app,
  { config, temporal },
) => {
  app.delete(
    '/v1/account',
    {
      config: { auth: { accept: ['browser'], allowPending: true } },
      schema: {
        tags: ['account'],
        summary: 'Delete the signed-in account (browser session; confirmation must equal its email)',
        body: AccountDeletionRequest,
        response: {
          200: AccountDeletionResponse,
          400: ErrorEnvelope,
          401: ErrorEnvelope,
          403: ErrorEnvelope,
          503: ErrorEnvelope,
        },
      },
    },
    async (request, reply) => {
      // The account comes only from the session; the body is a confirmation, never a selector.
      const p = principalOf(request);
      if (request.body.confirmation !== p.email) {
        throw validationError("confirmation must equal the signed-in account's email exactly.");
      }
      await markDeletionPending(request.em, p.accountId);
      const handle = await startAccountDeletion(temporal.client, config.temporal.taskQueue, p.accountId);
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          handle.result(),
          new Promise((_, reject) => {
            timer = setTimeout(() => reject(pendingError('is still running')), config.auth.accountDeletionWaitMs);
          }),
        ]);
      } catch (err) {
        if (err instanceof AppError) throw err;
        request.log.error({ err, workflowId: handle.workflowId }, 'account deletion failed');
        throw pendingError('could not complete');
      } finally {
        clearTimeout(timer);
      }
      clearSessionCookie(reply, config.publicBaseUrl);
      return { schemaVersion: 'service-account-deletion-v1' as const, status: 'deleted' as const };
    },
  );
};
