import { AppError } from '../errors.ts';
import {
  ExtractionError,
  assertContentMatches,
  extract,
  type SupportedContentType,
} from './extract/index.ts';
import { buildRecords } from './records.ts';

/** Above about 384 KB of text a dry run previews document structure only (spec section 8). */
export const PREVIEW_TEXT_LIMIT = 384_000;

export function extractionFailure(err: ExtractionError): AppError {
  return new AppError(400, 'invalid_ingest_request', err.publicMessage);
}

/** The plan of a dry run: what live processing would make of these bytes. Persists nothing. */
export async function planFor(bytes: Uint8Array, contentType: SupportedContentType, finalUrl: string | null) {
  let doc;
  try {
    assertContentMatches(bytes, contentType);
    doc = await extract(bytes, contentType, { structureOnlyAboveChars: PREVIEW_TEXT_LIMIT, sourceUrl: finalUrl ?? undefined });
  } catch (err) {
    if (err instanceof ExtractionError) throw extractionFailure(err);
    throw err;
  }
  const records = buildRecords(doc);
  const counts = {
    sourceExcerpts: records.excerpts.length,
    facts: records.facts.length,
    links: records.links.length,
    total: records.excerpts.length + records.facts.length + records.links.length,
  };
  const what = doc.structureOnly ? 'a structural preview of' : '';
  return {
    summary:
      `${doc.title ? `"${doc.title}"` : 'Untitled document'} (${contentType}, ${bytes.byteLength} bytes): ` +
      `${what ? `${what} ` : ''}${counts.sourceExcerpts} source excerpts, ${counts.facts} facts and ${counts.links} links ` +
      `(${counts.total} records)${doc.structureOnly ? '; live processing extracts the full text' : ''}.`,
    title: doc.title,
    contentType,
    sizeBytes: bytes.byteLength,
    finalUrl,
    structureOnly: doc.structureOnly,
    sections: doc.sections.length,
    pages: doc.pages,
    records: counts,
    // The built-in extractor needs no provider and costs no credits.
    estimatedCredits: 0,
    warnings: doc.warnings,
  };
}
