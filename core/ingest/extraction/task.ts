/**
 * The tasks an extraction process runs (./process.ts is its entry point): one at a time,
 * with the parent (./pool.ts) watching its CPU time and memory.
 */
import type { TaskResult } from './parts.ts';
import { ExtractionError, assertContentMatches, type PageText, type SupportedContentType } from '../extract/index.ts';
import type { IngestLimits } from '../../../platform/config.ts';
import { planOf, prepareSource, type NeedsOcr, type Plan, type PreparedSource, type Previewable } from '../prepare/prepare.ts';

type BuildInput = { jobId: string; contentType: SupportedContentType; sourceUrl?: string; crossSiteRedirect: boolean; limits: IngestLimits; ocr?: PageText[] };

export type ExtractionTask =
  | { kind: 'check'; bytes: Uint8Array; contentType: SupportedContentType }
  | ({ kind: 'preview'; limits: IngestLimits } & Previewable)
  | ({ kind: 'build'; bytes: Uint8Array } & BuildInput)
  | { kind: 'ocr'; bytes: Uint8Array; pages: number[] };

/** A task as sent to an extraction process: a build's bytes follow on request (./parts.ts, ByteSource). */
export type WireTask = Exclude<ExtractionTask, { kind: 'build' }> | ({ kind: 'build'; size: number } & BuildInput);

async function perform(task: ExtractionTask): Promise<null | Plan | PreparedSource | NeedsOcr | PageText[]> {
  switch (task.kind) {
    case 'check':
      assertContentMatches(task.bytes, task.contentType);
      return null;
    case 'preview':
      return planOf(task, task.limits);
    case 'build':
      return prepareSource(task);
    case 'ocr':
      // The recogniser (tesseract, canvas, pdf.js) is loaded by processes that run OCR only.
      return (await import('./tesseract.ts')).recognisePages(task.bytes, task.pages);
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

