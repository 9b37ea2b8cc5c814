import { createHash, randomUUID } from 'node:crypto';
import type { Orm } from '../../platform/db/orm.ts';
import { bound, sql } from '../../platform/db/sql.ts';
import { loadConfig } from '../../platform/config.ts';
import { inProcessExtraction } from './in-process-extraction.ts';
import { buildSourceRecords, type ProcessResult } from '../../core/ingest/build/build.ts';

// Trusted fixtures, in this process: what these tests measure is storage, not isolation.
const extraction = inProcessExtraction(loadConfig({}).extraction.limits);

/**
 * Stores a file as an upload job and runs the real build step on it (source, records and their impact
 * rows) in this process, without HTTP or Temporal: for retrieval tests that need sources but not the
 * ingest pipeline, and for the ingest benchmark's storage-only measurement.
 */
export async function ingestUpload(
  orm: Orm,
  accountId: string,
  file: { bytes: Buffer; contentType: string; filename: string },
): Promise<{ id: string; result: ProcessResult }> {
  const em = orm.em.fork();
  const id = randomUUID();
  await bound(em, sql`insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, filename, content_type, dated_at)
    values (${id}, ${accountId}, 'file', 'queued', ${id}, ${id}, ${file.filename}, ${file.contentType}, current_date)`);
  await bound(em, sql`insert into ingest_blob (job_id, account_id, bytes, sha256, size_bytes, content_type) values (${id}, ${accountId}, ${file.bytes}, ${createHash('sha256').update(file.bytes).digest('hex')}, ${file.bytes.byteLength}, ${file.contentType})`);
  const result = await buildSourceRecords(em, extraction, { jobId: id, fetch: null });
  if (result.status === 'needs_ocr') throw new Error(`pages ${result.pages.join(', ')} need OCR`);
  return { id, result };
}

/** A Markdown document through ingestUpload; returns the source id. */
export async function ingestMarkdown(orm: Orm, accountId: string, text: string, filename = 'doc.md'): Promise<string> {
  return (await ingestUpload(orm, accountId, { bytes: Buffer.from(text), contentType: 'text/markdown', filename })).id;
}
