import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { AccountOverview, OverviewQuery } from '../../../core/contracts/account.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { overviewLists } from '../../../core/ingest/sources.ts';
import { getCreditBalance } from '../../../core/metering/credits.ts';
import { principalOf } from '../../plugins/auth.ts';
import { ACCOUNT_MANAGEMENT } from './api-keys.ts';

export const overviewRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/v1/account/overview',
    {
      config: { auth: ACCOUNT_MANAGEMENT },
      schema: {
        tags: ['account'],
        summary: 'Account overview: credits, record counts, recent sources and ingest jobs',
        querystring: OverviewQuery,
        response: { 200: AccountOverview, 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope },
      },
    },
    async (request) => {
      const p = principalOf(request);
      const credits = await getCreditBalance(request.em, p.accountId);
      const lists = await overviewLists(request.em, p.accountId, {
        sources: request.query.sourceLimit,
        jobs: request.query.ingestJobLimit,
      });
      return {
        schemaVersion: 'service-account-overview-v2' as const,
        account: { email: p.email, displayName: p.displayName },
        credits: { totalCreditsRemaining: credits.totalRemaining },
        recordCounts: { total: lists.recordTotal },
        sources: lists.sources,
        ingestJobs: lists.ingestJobs,
      };
    },
  );
};
