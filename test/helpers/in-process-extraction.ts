import type { ExtractionPool } from '../../core/ingest/extraction/pool.ts';
import { readAll, valueOf, type TaskResult } from '../../core/ingest/extraction/parts.ts';
import { runExtraction, type ExtractionTask } from '../../core/ingest/extraction/task.ts';
import type { IngestLimits } from '../../platform/config.ts';

/**
 * The same work on the calling thread, without limits on CPU time or memory: for tests and benchmarks
 * that measure or seed storage, never for untrusted input.
 */
export function inProcessExtraction(limits: IngestLimits): ExtractionPool {
  const unwrap = async <T>(task: ExtractionTask) => valueOf((await runExtraction(task)) as TaskResult<T>);
  return {
    check: async (_accountId, bytes, contentType) => {
      await unwrap<null>({ kind: 'check', bytes, contentType });
    },
    preview: (_accountId, doc) => unwrap({ kind: 'preview', ...doc, limits }),
    build: async (_accountId, { source, ...input }) => unwrap({ kind: 'build', ...input, bytes: await readAll(source), limits }),
    ocr: (_accountId, bytes, pages) => unwrap({ kind: 'ocr', bytes, pages }),
    close: async () => {},
  };
}
