import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Config } from '../../../platform/config.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import {
  FileIngestRequest,
  FilePlanResponse,
  JobResponse,
  SourceIdParams,
  UrlIngestRequest,
  UrlPlanResponse,
} from '../../../core/contracts/ingest.ts';
import { publicJob } from '../../../core/ingest/jobs.ts';
import type { ExtractionPool } from '../../../core/ingest/extraction/pool.ts';
import { localOcrProvider } from '../../../core/ingest/ocr/provider.ts';
import type { Logger } from '../../../platform/logger.ts';
import { requestSourceDeletion } from '../../../core/ingest/sources.ts';
import { decodeUpload, previewFile, previewUrl, submitFile, submitUrl, type IngestDeps } from '../../../core/ingest/submission/submit.ts';
import type { FreeWorkLimiter } from '../../../platform/ops/free-work.ts';
import type { TemporalClientHandle } from '../../../temporal/client.ts';
import { workflowStarts } from '../../../temporal/starts.ts';
import { principalOf } from '../../plugins/auth.ts';
import type { IngestMount } from './jobs.ts';

const errors = {
  400: ErrorEnvelope, 401: ErrorEnvelope, 402: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope,
  413: ErrorEnvelope, 429: ErrorEnvelope, 502: ErrorEnvelope,
};
/** 50,000,000 bytes of base64 is about 66.7 MB; the body limit lets such a request be answered (413), not dropped. */
const FILE_BODY_LIMIT = 72 * 1024 * 1024;

/** The job a request queued, or (created false) the job an earlier request queued. */
const queuedJob = (r: { created: boolean; job: Parameters<typeof publicJob>[0] }) =>
  ({ schemaVersion: 'service-ingest-job-v1' as const, mode: 'queued' as const, created: r.created, job: publicJob(r.job) });

export const ingestSubmitRoutes: FastifyPluginAsyncZod<
  IngestMount & { config: Config; temporal: TemporalClientHandle; extraction: ExtractionPool; freeWork: FreeWorkLimiter }
> = async (app, { config, temporal, extraction, freeWork, base, auth, tags }) => {
  const starts = workflowStarts(temporal.client, config.temporal.taskQueue, { ingestHeartbeatMs: config.ingestHeartbeatTimeoutMs });
  const provider = localOcrProvider(extraction, config.ocr.creditsPerPage);
  const deps = (em: IngestDeps['em'], log: unknown): IngestDeps => ({
    em,
    startJob: starts.ingestJob,
    policy: { allowlist: config.ingestUrlAllowlist },
    fetchTimeoutMs: config.ingestFetchTimeoutMs,
    extraction,
    freeWork,
    // Fastify's request logger is a pino child logger.
    ocr: { provider, ocr: config.ocr, logger: log as Logger },
  });

  app.post(
    `${base}/ingest/url`,
    {
      config: { auth },
      schema: {
        tags,
        summary: 'Preview (dry run, the default) or queue (dryRun false) the ingest of a URL',
        body: UrlIngestRequest,
        response: { 200: UrlPlanResponse.or(JobResponse), 202: JobResponse, ...errors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      if (body.dryRun) {
        const { plan, headers } = await previewUrl(deps(request.em, request.log), principalOf(request), body.url);
        return reply.code(200).headers(headers).send({ schemaVersion: 'service-url-ingest-plan-v1' as const, mode: 'dry-run' as const, plan });
      }
      const r = await submitUrl(deps(request.em, request.log), principalOf(request), body);
      return reply.code(r.created ? 202 : 200).headers(r.headers).send(queuedJob(r));
    },
  );

  app.post(
    `${base}/ingest/file`,
    {
      bodyLimit: FILE_BODY_LIMIT,
      config: { auth },
      schema: {
        tags,
        summary: 'Preview (dry run, the default) or queue (dryRun false) the ingest of an uploaded file',
        body: FileIngestRequest,
        response: { 200: FilePlanResponse.or(JobResponse), 202: JobResponse, ...errors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      const bytes = decodeUpload(body.contentBase64);
      if (body.dryRun) {
        const { plan, headers } = await previewFile(deps(request.em, request.log), principalOf(request), bytes, body.contentType);
        return reply.code(200).headers(headers).send({ schemaVersion: 'service-file-ingest-plan-v1' as const, mode: 'dry-run' as const, plan });
      }
      const r = await submitFile(deps(request.em, request.log), principalOf(request), { ...body, bytes });
      return reply.code(r.created ? 202 : 200).headers(r.headers).send(queuedJob(r));
    },
  );

  app.delete(
    `${base}/sources/:sourceId`,
    {
      config: { auth },
      schema: {
        tags,
        summary: 'Delete a source (its id is the id of the ingest job that created it); poll the returned job',
        params: SourceIdParams,
        response: { 200: JobResponse, 202: JobResponse, ...errors },
      },
    },
    async (request, reply) => {
      const r = await requestSourceDeletion(request.em, starts.sourceDeletion, principalOf(request), request.params.sourceId);
      return reply.code(r.created ? 202 : 200).send(queuedJob(r));
    },
  );
};
