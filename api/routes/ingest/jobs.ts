import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { JobIdParams, JobListQuery, JobListResponse, JobReadResponse } from '../../../core/contracts/ingest.ts';
import { getJob, listJobs, publicJob } from '../../../core/ingest/jobs.ts';
import { principalOf, type AuthRule } from '../../plugins/auth.ts';

export type IngestMount = { base: string; auth: AuthRule; tags: string[] };

/** Ingest, job status and source deletion: API keys with scope ingest, and CLI session tokens (spec section 5). */
export const INGEST_API: IngestMount = { base: '/v1', auth: { accept: ['apiKey', 'cli'], scopes: ['ingest'] }, tags: ['ingest'] };

/**
 * The same routes for the console under /v1/account (/v1/account/ingest/url, …/ingest/jobs,
 * …/sources/{id}): the browser session only, CSRF on writes. A browser session is never a product API
 * credential (spec 5), so the console gets its own account-scoped mount, as it does for memory.
 */
export const INGEST_CONSOLE: IngestMount = { base: '/v1/account', auth: { accept: ['browser'] }, tags: ['console ingest'] };

const errors = { 400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope };

export const ingestJobRoutes: FastifyPluginAsyncZod<IngestMount> = async (app, { base, auth, tags }) => {
  app.get(
    `${base}/ingest/jobs`,
    {
      config: { auth },
      schema: {
        tags,
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
    `${base}/ingest/jobs/:jobId`,
    {
      config: { auth },
      schema: {
        tags,
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
