/**
 * What crosses the boundary between an extraction process (./task.ts) and its parent
 * (./pool.ts) besides the task: results, refusals and a build's parts. Kept apart from the
 * tasks so that the parent (the worker, the API) never loads the parsers.
 */
import { ExtractionError } from '../extract/types.ts';
import type { PreparedSource, RecordRow } from '../prepare/prepare.ts';

/** A refusal crosses the process boundary as data (errors lose their class on the way). */
export type Refusal = { refused: { reason: ExtractionError['reason']; publicMessage: string; message: string } };
export type TaskResult<T> = { value: T } | Refusal;

/** Sent to the parent before the work starts, so it can watch this process (pid) from now on. */
export type StartedMessage = { cairnExtractionStarted: number };

/**
 * A build's bytes, read in pieces from where they are stored. The extraction process asks for them
 * piece by piece ({ cairnWantBytes }) and the parent answers each ({ cairnBytes }): the worker never holds
 * a whole document, however large, beside the process extracting it.
 */
export type ByteSource = { size: number; read(at: number, length: number): Promise<Uint8Array | null> };
export type WantBytesMessage = { cairnWantBytes: { at: number; length: number } };
export type BytesMessage = { cairnBytes: Uint8Array };
export const BYTE_PIECE = 1_048_576;

/** Bytes already in memory as a source (tests, small inputs). */
export const bytesSource = (bytes: Uint8Array): ByteSource => ({ size: bytes.byteLength, read: async (at, length) => bytes.subarray(at, at + length) });

/** All of a source's bytes, read piece by piece into one buffer. */
export async function readAll(source: ByteSource): Promise<Uint8Array> {
  const out = new Uint8Array(source.size);
  for (let at = 0; at < source.size; ) {
    const piece = await source.read(at, Math.min(BYTE_PIECE, source.size - at));
    if (!piece || piece.byteLength === 0) throw new Error(`the stored bytes ended at ${at} of ${source.size}`);
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}

/** A task's value, or its refusal as the ExtractionError it was in the extraction process. */
export function valueOf<T>(result: TaskResult<T>): T {
  if ('refused' in result) {
    throw Object.assign(new ExtractionError(result.refused.reason, result.refused.publicMessage), { message: result.refused.message });
  }
  return result.value;
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
