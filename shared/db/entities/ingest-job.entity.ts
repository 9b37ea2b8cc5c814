import { defineEntity, p } from '@mikro-orm/core';

export type IngestJobKind = 'url' | 'file' | 'source_deletion';
export type IngestJobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'quarantined';
export type JobFailure = { message: string; retryable: boolean; failedAt: string };

export const IngestJobSchema = defineEntity({
  name: 'IngestJob',
  tableName: 'ingest_job',
  properties: {
    id: p.uuid().primary(),
    accountId: p.uuid(),
    kind: p.text().$type<IngestJobKind>(),
    status: p.text().$type<IngestJobStatus>(),
    idempotencyKey: p.text().nullable(),
    requestHash: p.text().nullable(),
    sourceId: p.uuid().nullable(),
    attempts: p.integer(),
    failure: p.json<JobFailure>().nullable(),
    createdAt: p.datetime(),
    updatedAt: p.datetime().onUpdate(() => new Date()),
    completedAt: p.datetime().nullable(),
    sourceUrl: p.text().nullable(),
    filename: p.text().nullable(),
    contentType: p.text().nullable(),
    datedAt: p.string().columnType('date').nullable(),
    title: p.text().nullable(),
    sizeBytes: p.bigint('number').nullable(),
    recordCounts: p.json<{ sourceExcerpts: number; facts: number; links: number; total: number }>().nullable(),
    quarantineReason: p.text().nullable(),
    /** The audience of the source (a limited key's first label; docs/api.md, Audiences), or null. */
    audience: p.text().nullable(),
  },
});
export class IngestJob extends IngestJobSchema.class {}
IngestJobSchema.setClass(IngestJob);
