import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AccountUsage, UsageQuery } from '../../../core/contracts/account.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { usageReport } from '../../../core/metering/usage.ts';
import { principalOf } from '../../plugins/auth.ts';
import { ACCOUNT_MANAGEMENT } from './api-keys.ts';

export const usageRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/v1/account/usage',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags: ['account'],
        summary: 'Credit balances, quota counters, recent ledger rows and 30 daily usage buckets',
        querystring: UsageQuery,
        response: { 200: AccountUsage, 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope },
      },
    },
    async (request) => usageReport(request.em, principalOf(request).accountId, request.query.ledgerLimit),
  );
};
