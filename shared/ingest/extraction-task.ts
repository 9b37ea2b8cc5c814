/**
 * The tasks an extraction process runs (./extraction-process.ts is its entry point): one at a time,
 * with the parent (./extraction-pool.ts) watching its CPU time and memory.
 */
import { ExtractionError, assertContentMatches, type PageText, type SupportedContentType } from './extract/index.ts';
import { recognisePages } from './ocr/tesseract.ts';
import { planOf, prepareSource, type IngestLimits, type NeedsOcr, type Plan, type PreparedSource } from './prepare.ts';

export type ExtractionTask =
  | { kind: 'check'; bytes: Uint8Array; contentType: SupportedContentType }
  | { kind: 'preview'; bytes: Uint8Array; contentType: SupportedContentType; finalUrl: string | null; limits: IngestLimits; ocr?: PageText[] }
  | {
      kind: 'build'; jobId: string; bytes: Uint8Array; contentType: SupportedContentType; sourceUrl?: string;
      crossSiteRedirect: boolean; limits: IngestLimits; ocr?: PageText[];
    }
  | { kind: 'ocr'; bytes: Uint8Array; pages: number[] };

/** A refusal crosses the process boundary as data (errors lose their class on the way). */
export type Refusal = { refused: { reason: ExtractionError['reason']; publicMessage: string; message: string } };
export type TaskResult<T> = { value: T } | Refusal;

/** Sent to the parent before the work starts, so it can watch this process (pid) from now on. */
export type StartedMessage = { cairnExtractionStarted: number };

async function perform(task: ExtractionTask): Promise<null | Plan | PreparedSource | NeedsOcr | PageText[]> {
  switch (task.kind) {
    case 'check':
      assertContentMatches(task.bytes, task.contentType);
      return null;
    case 'preview':
      return planOf(task.bytes, task.contentType, task.finalUrl, task.limits, task.ocr);
    case 'build':
      return prepareSource(task);
    case 'ocr':
      return recognisePages(task.bytes, task.pages);
  }
}

/** Runs one task here, a refusal returned as data. */
export async function runExtraction(task: ExtractionTask): Promise<TaskResult<unknown>> {
  try {
    return { value: await perform(task) };
  } catch (err) {
    if (err instanceof ExtractionError) return { refused: { reason: err.reason, publicMessage: err.publicMessage, message: err.message } };
    throw err;
  }
}

