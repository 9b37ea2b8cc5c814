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
