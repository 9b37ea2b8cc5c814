import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ErrorEnvelope } from '../../../shared/contracts/common.ts';
import { JobIdParams, JobListQuery, JobListResponse, JobReadResponse } from '../../../shared/contracts/ingest.ts';
import { getJob, listJobs, publicJob } from '../../../shared/ingest/jobs.ts';
import { principalOf, type AuthRule } from '../../plugins/auth.ts';

/** Job status: API keys with scope ingest, and CLI session tokens (spec section 5). */
export const INGEST_READ: AuthRule = { accept: ['apiKey', 'cli'], scopes: ['ingest'] };
const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };

export const ingestJobRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/v1/ingest/jobs',
    {
      config: { auth: INGEST_READ },
      schema: {
        tags: ['ingest'],
        summary: 'List ingest jobs, newest first',
        querystring: JobListQuery,
        response: { 200: JobListResponse, ...errors },
      },
    },
    async (request) => {
      const page = await listJobs(request.em, principalOf(request), request.query);
      return { schemaVersion: 'service-ingest-job-list-v1' as const, jobs: page.jobs.map(publicJob), pagination: page.pagination };
    },
  );

  app.get(
    '/v1/ingest/jobs/:jobId',
    {
      config: { auth: INGEST_READ },
      schema: {
        tags: ['ingest'],
        summary: 'Read one ingest job',
        params: JobIdParams,
        response: { 200: JobReadResponse, ...errors },
      },
    },
    async (request) => {
      const job = await getJob(request.em, principalOf(request), request.params.jobId);
      return { schemaVersion: 'service-ingest-job-v1' as const, job: publicJob(job) };
    },
  );
};
