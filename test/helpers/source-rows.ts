import { createHash, randomUUID } from 'node:crypto';
import type { Orm } from '../../shared/db/orm.ts';
import { bound } from '../../shared/db/sql.ts';
import { buildSourceRecords } from '../../shared/ingest/process.ts';

/**
 * Stores a Markdown document as an upload and runs the real build step (source, records and their
 * impact rows) without Temporal, for retrieval tests that need sources but not the ingest pipeline.
 */
export async function ingestMarkdown(orm: Orm, accountId: string, text: string, filename = 'doc.md'): Promise<string> {
  const em = orm.em.fork();
  const id = randomUUID();
  const bytes = Buffer.from(text);
  await bound(em, `insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, filename, content_type, dated_at)
    values (?, ?, 'file', 'queued', ?, ?, ?, 'text/markdown', current_date)`, [id, accountId, id, id, filename]);
  await bound(em, `insert into ingest_blob (job_id, account_id, bytes, sha256, size_bytes, content_type) values (?, ?, ?, ?, ?, 'text/markdown')`,
    [id, accountId, bytes, createHash('sha256').update(bytes).digest('hex'), bytes.byteLength]);
  await buildSourceRecords(em, id, null);
  return id;
}
