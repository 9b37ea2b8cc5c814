import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { getAccount } from '../../../core/auth/accounts.ts';
import { getApiKey } from '../../../core/auth/api-keys.ts';
import { AccessResponse } from '../../../core/contracts/account.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import type { Config } from '../../../platform/config.ts';
import { processingBudget } from '../../../core/ingest/ocr/budgets.ts';
import { getCreditBalance } from '../../../core/metering/credits.ts';
import { principalOf } from '../../plugins/auth.ts';

export const accessRoutes: FastifyPluginAsyncZod<{ ocr: Config['ocr'] }> = async (app, { ocr }) => {
  app.get(
    '/v1/access',
    {
      config: { auth: { accept: ['apiKey'] } },
      schema: {
        tags: ['ingest'],
        summary: "The calling API key's scopes, context boundary, quotas and credits",
        response: { 200: AccessResponse, 401: ErrorEnvelope, 403: ErrorEnvelope },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const [key, account, credits, processing] = await Promise.all([
        getApiKey(request.em, p.credentialId),
        getAccount(request.em, p.accountId),
        getCreditBalance(request.em, p.accountId),
        processingBudget(request.em, ocr, p.accountId),
      ]);
      return {
        schemaVersion: 'service-access-v1' as const,
        key: { id: key.id, name: key.name, prefix: key.prefix, scopes: [...p.scopes], maxPreset: p.maxPreset },
        account: { email: account.email },
        contextBoundary: { workspaces: ['default'], audiences: p.audiences ? [...p.audiences] : null },
        quotas: {
          query: { dailyLimit: account.queryDailyLimit, monthlyLimit: account.queryMonthlyLimit },
          ingest: { dailyLimit: account.ingestDailyLimit, monthlyLimit: account.ingestMonthlyLimit },
        },
        credits: {
          totalRemaining: credits.totalRemaining,
          monthlyRemaining: credits.monthlyRemaining,
          onboardingRemaining: credits.onboardingRemaining,
        },
        processingBudgets: {
          ocr: {
            creditsPerPage: processing.creditsPerPage,
            pagesPerRequest: processing.pagesPerRequest,
            pagesPerDay: processing.pagesPerDay,
            pagesUsedToday: processing.pagesUsedToday,
          },
        },
      };
    },
  );
};
