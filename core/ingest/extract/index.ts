/**
 * Document extraction for ingest: bytes of one of the five supported content types in, canonical
 * plain text with exact section and hyperlink offsets out. Records are built from the result by
 * ../records.ts.
 *
 * Previews (dry runs) pass `structureOnlyAboveChars` (PREVIEW_TEXT_LIMIT = 384,000): a document
 * whose text is larger than that is returned as its structure only (title, heading outline, page
 * count) with a warning; live processing omits the option and always extracts in full.
 */
import { decodeText, hasPdfMagic, isSupportedContentType, parseJsonBytes } from './decode.ts';
import {
  ExtractionError,
  UNLIMITED,
  type ExpansionLimits,
  type ExtractContext,
  type ExtractedDocument,
  type OutlineEntry,
  type PageText,
  type RawExtraction,
  type Section,
  PREVIEW_TEXT_LIMIT,
  type SupportedContentType,
} from './types.ts';

export { SUPPORTED_CONTENT_TYPES, ExtractionError, overLimit, PREVIEW_TEXT_LIMIT } from './types.ts';
export type {
  DocLink,
  ExpansionLimits,
  ExtractedDocument,
  ExtractionFailureReason,
  PageText,
  Section,
  SupportedContentType,
} from './types.ts';
export { assertContentMatches, normalizeContentType } from './decode.ts';

export const structureOnlyWarning = (limit = PREVIEW_TEXT_LIMIT) =>
  `Only document structure was previewed: the text is larger than about ${Math.round(limit / 1000)} KB; live processing extracts it in full.`;

export type ExtractOptions = {
  /**
   * Preview mode: above this many characters of text only the structure is returned. Dry runs pass
   * PREVIEW_TEXT_LIMIT (384,000, the spec's "about 384 KB"); without a number (live processing)
   * the text is always extracted in full.
   */
  structureOnlyAboveChars?: number;
  /** Where the document came from: relative hyperlinks are resolved against it. */
  sourceUrl?: string;
  /** Bounds on pages, inflated bytes and text; absent = none (trusted input, benchmarks). */
  limits?: ExpansionLimits;
  /** Recognised text of a PDF's scanned pages (core/ingest/ocr): without it such pages are reported in needsOcr. */
  ocr?: PageText[];
};

/** The outline as text: one line per heading (its last path element), one section per line. */
function structureOf(outline: OutlineEntry[]): { text: string; sections: Section[] } {
  const lines: string[] = [];
  const sections: Section[] = [];
  let pos = 0;
  for (const o of outline) {
    const line = o.path[o.path.length - 1];
    if (!line) continue;
    if (lines.length > 0) pos += 1;
    const s: Section = { path: o.path, start: pos, end: pos + line.length };
    if (o.page !== undefined) s.page = o.page;
    sections.push(s);
    lines.push(line);
    pos += line.length;
  }
  // Sections partition the text: each owns the newline after it.
  for (let i = 0; i + 1 < sections.length; i++) sections[i]!.end = sections[i + 1]!.start;
  return { text: lines.join('\n'), sections };
}

/**
 * Each format's parser is loaded when a document of its type first comes: an extraction process that
 * only ever sees text does not hold pdf.js or the Markdown and HTML parsers (most of its idle memory).
 */
async function run(bytes: Uint8Array, contentType: SupportedContentType, ctx: ExtractContext): Promise<RawExtraction> {
  switch (contentType) {
    case 'application/pdf':
      if (!hasPdfMagic(bytes)) {
        throw new ExtractionError('type_mismatch', undefined, { detail: 'content declared as application/pdf has no %PDF- header' });
      }
      return (await import('./pdf.ts')).extractPdf(bytes, ctx);
    case 'application/json':
      return (await import('./json.ts')).extractJson(parseJsonBytes(bytes), ctx);
    case 'text/markdown':
      return (await import('./markdown.ts')).extractMarkdown(decodeText(bytes, contentType), ctx);
    case 'text/html':
      return (await import('./html.ts')).extractHtml(decodeText(bytes, contentType), ctx);
    case 'text/plain':
      return (await import('./plain.ts')).extractPlain(decodeText(bytes, contentType), ctx);
  }
}

/**
 * Extracts one document. Throws ExtractionError: 'type_mismatch' when the bytes are not what the
 * content type says, 'encrypted' / 'corrupt' for unreadable PDFs, 'empty' when there is no text,
 * 'unsupported' for a content type outside SUPPORTED_CONTENT_TYPES.
 */
export async function extract(
  bytes: Uint8Array,
  contentType: SupportedContentType,
  opts?: ExtractOptions,
): Promise<ExtractedDocument> {
  if (!isSupportedContentType(contentType)) throw new ExtractionError('unsupported');
  // Only an explicit number asks for a preview: an option that happens to be undefined must never
  // cut live processing down to structure.
  const asked = opts?.structureOnlyAboveChars;
  const preview = typeof asked === 'number' && !Number.isNaN(asked);
  const limit = preview ? Math.max(0, asked) : Number.POSITIVE_INFINITY;
  if (bytes.length === 0) throw new ExtractionError('empty');
  const ctx: ExtractContext = { limit, limits: opts?.limits ?? UNLIMITED };
  if (opts?.sourceUrl) ctx.sourceUrl = opts.sourceUrl;
  if (opts?.ocr) ctx.ocr = new Map(opts.ocr.map((p) => [p.page, p.text]));

  const raw = await run(bytes, contentType, ctx);
  if (preview && (raw.overLimit || raw.text.length > limit)) {
    const { text, sections } = structureOf(raw.outline);
    return {
      contentType,
      title: raw.title,
      text,
      sections,
      links: [],
      pages: raw.pages,
      warnings: [...raw.warnings, structureOnlyWarning(limit)],
      structureOnly: true,
    };
  }
  if (!raw.text.trim() && !raw.needsOcr) throw new ExtractionError('empty');
  return {
    contentType,
    title: raw.title,
    text: raw.text,
    sections: raw.sections,
    links: raw.links,
    pages: raw.pages,
    warnings: raw.warnings,
    structureOnly: false,
    ...(raw.needsOcr ? { needsOcr: raw.needsOcr } : {}),
  };
}
