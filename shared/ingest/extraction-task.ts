/**
 * The tasks an extraction process runs (./extraction-process.ts is its entry point): one at a time,
 * with the parent (./extraction-pool.ts) watching its CPU time and memory.
 */
import { ExtractionError, assertContentMatches, type PageText, type SupportedContentType } from './extract/index.ts';
import { recognisePages } from './ocr/tesseract.ts';
import { planOf, prepareSource, type IngestLimits, type NeedsOcr, type Plan, type PreparedSource, type RecordRow } from './prepare.ts';

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

/**
 * A build's text and records leave the extraction process in slices, as messages of their own, ahead of
 * the task's result. Sent whole, a 50 MB document's result would sit in the parent several times over:
 * the IPC chunks, their concatenation, the objects, and once more as tinypool passes a task's result on
 * through a MessagePort (a structured clone). A record whose text is its span of the document's text
 * (every excerpt) travels without it: the parent takes the span from the text it already has.
 */
export type PartMessage = { cairnText: string } | { cairnRows: WireRow[] };
type WireRow = Omit<RecordRow, 'text'> & { text: string | null };
const TEXT_CHARS_PER_PART = 1_048_576;
const ROWS_PER_PART = 1000;

function isPrepared(value: unknown): value is PreparedSource {
  return typeof value === 'object' && value !== null && 'rows' in value && 'text' in value;
}

/**
 * Sends a build's text and records as parts, each once the one before it is written (so at most one
 * part's serialised copy waits in this process); returns the result left to send as the task's value.
 */
export async function sendParts(result: TaskResult<unknown>, send: (part: PartMessage) => Promise<void>): Promise<TaskResult<unknown>> {
  if (!('value' in result) || !isPrepared(result.value)) return result;
  const { text, rows } = result.value;
  for (let i = 0; i < text.length; i += TEXT_CHARS_PER_PART) await send({ cairnText: text.slice(i, i + TEXT_CHARS_PER_PART) });
  for (let i = 0; i < rows.length; i += ROWS_PER_PART) {
    const slice = rows.slice(i, i + ROWS_PER_PART);
    await send({ cairnRows: slice.map((r) => (r.text === text.slice(r.start_offset, r.end_offset) ? { ...r, text: null } : r)) });
  }
  return { value: { ...result.value, text: '', rows: [] } };
}

/** Collects the parts of one task in the parent, and puts them back into its result. */
export function partsReceiver() {
  const chunks: string[] = [];
  const wire: WireRow[] = [];
  return {
    /** Takes `message` when it is a part. */
    take(message: unknown): boolean {
      if (typeof message !== 'object' || message === null) return false;
      if ('cairnText' in message) chunks.push((message as { cairnText: string }).cairnText);
      else if ('cairnRows' in message) for (const row of (message as { cairnRows: WireRow[] }).cairnRows) wire.push(row);
      else return false;
      return true;
    },
    restore<T>(result: TaskResult<T>): TaskResult<T> {
      if (!('value' in result) || !isPrepared(result.value)) return result;
      const text = chunks.join('');
      for (const row of wire) row.text ??= text.slice(row.start_offset, row.end_offset);
      return { value: { ...result.value, text, rows: wire as RecordRow[] } };
    },
  };
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

