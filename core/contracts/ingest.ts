import { z } from 'zod';
import { DateTime } from './auth.ts';

export const Job = z
  .object({
    id: z.uuid(),
    kind: z.enum(['url', 'file', 'source_deletion']),
    status: z.enum(['queued', 'running', 'succeeded', 'failed', 'quarantined']),
    attempts: z.int().min(0),
    failure: z.object({ message: z.string(), retryable: z.boolean(), failedAt: DateTime }).nullable(),
    createdAt: DateTime,
    completedAt: DateTime.nullable(),
    startedAt: DateTime.nullable().describe('When processing first began; null while the job waits. The status stays `queued` until the job ends.'),
    queuePosition: z.int().min(1).nullable().describe("While the job waits: its place in the account's own line of waiting jobs (1 = next). Jobs of different accounts take turns."),
    sourceUrl: z.string().nullable().describe('The submitted URL (url jobs).'),
    filename: z.string().nullable().describe('The uploaded file name (file jobs).'),
    title: z.string().nullable().describe('The document title, once extracted.'),
    sourceId: z.uuid().nullable().describe('The source a source_deletion job deletes (url and file jobs: their own id is the source id).'),
    records: z
      .object({ sourceExcerpts: z.int(), facts: z.int(), links: z.int(), total: z.int() })
      .nullable()
      .describe('Records the job made, once it succeeded.'),
  })
  .meta({ id: 'Job' });

export const JobListQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(100).default(20),
  cursor: z.string().min(1).max(200).optional(),
});

export const JobListResponse = z
  .object({
    schemaVersion: z.literal('service-ingest-job-list-v1'),
    jobs: z.array(Job),
    pagination: z.object({
      limit: z.int(),
      returned: z.int(),
      hasMore: z.boolean(),
      nextCursor: z.string().nullable(),
    }),
  })
  .meta({ id: 'JobListResponse' });

export const JobIdParams = z.strictObject({ jobId: z.uuid() });

export const JobReadResponse = z
  .object({ schemaVersion: z.literal('service-ingest-job-v1'), job: Job })
  .meta({ id: 'JobReadResponse' });

export const MAX_FILE_BYTES = 50_000_000;
export const CONTENT_TYPES = ['application/pdf', 'text/markdown', 'text/plain', 'text/html', 'application/json'] as const;

const IdempotencyKey = z.string().min(8).max(160);
/** YYYY-MM-DD, and a real calendar date. */
const DatedAt = z.iso.date();

const common = {
  dryRun: z.boolean().default(true),
  datedAt: DatedAt.optional(),
  idempotencyKey: IdempotencyKey.optional(),
};

export const UrlIngestRequest = z
  .strictObject({ url: z.string().min(1).max(2048), ...common })
  .meta({ id: 'UrlIngestRequest' });

export const FileIngestRequest = z
  .strictObject({
    filename: z.string().trim().min(1).max(255),
    contentType: z.enum(CONTENT_TYPES),
    // Checked by length and alphabet here; the decoded size (<= 50,000,000 bytes, else 413) is computed
    // from the length before anything is decoded.
    contentBase64: z.string().min(1).max(70_000_000),
    ...common,
  })
  .meta({ id: 'FileIngestRequest' });

export const Plan = z
  .object({
    summary: z.string(),
    title: z.string().nullable(),
    contentType: z.string(),
    sizeBytes: z.int(),
    finalUrl: z.string().nullable(),
    structureOnly: z.boolean(),
    sections: z.int(),
    pages: z.int().nullable(),
    records: z.object({ sourceExcerpts: z.int(), facts: z.int(), links: z.int(), total: z.int() }),
    estimatedCredits: z.int(),
    warnings: z.array(z.string()),
    recognisedText: z
      .array(z.object({ page: z.int(), text: z.string(), confidence: z.int() }))
      .optional()
      .describe('Provider-backed previews: the text OCR recognised on each scanned page (up to about 384 KB in all).'),
  })
  .meta({ id: 'IngestPlan' });

export const UrlPlanResponse = z
  .object({ schemaVersion: z.literal('service-url-ingest-plan-v1'), mode: z.literal('dry-run'), plan: Plan })
  .meta({ id: 'UrlPlanResponse' });

export const FilePlanResponse = z
  .object({ schemaVersion: z.literal('service-file-ingest-plan-v1'), mode: z.literal('dry-run'), plan: Plan })
  .meta({ id: 'FilePlanResponse' });

export const JobResponse = z
  .object({ schemaVersion: z.literal('service-ingest-job-v1'), mode: z.literal('queued'), created: z.boolean(), job: Job })
  .meta({ id: 'JobResponse' });

export const SourceIdParams = z.strictObject({ sourceId: z.uuid() });
