/**
 * Types shared by the extractors. Re-exported from ./index.ts, which is the public entry point.
 */

/** Above about 384 KB of text a dry run previews document structure only (spec section 8). */
export const PREVIEW_TEXT_LIMIT = 384_000;

export const SUPPORTED_CONTENT_TYPES = [
  'application/pdf',
  'text/markdown',
  'text/plain',
  'text/html',
  'application/json',
] as const;
export type SupportedContentType = (typeof SUPPORTED_CONTENT_TYPES)[number];

/** The heading path of a span of `text` (text.slice(start, end)). Sections partition the text in order. */
export type Section = { path: string[]; start: number; end: number; page?: number };
/** A hyperlink: its anchor text is text.slice(start, end). */
export type DocLink = { href: string; text: string; start: number; end: number };

export type ExtractedDocument = {
  contentType: SupportedContentType;
  title: string | null;
  text: string;
  sections: Section[];
  links: DocLink[];
  pages: number | null;
  warnings: string[];
  structureOnly: boolean;
  /** PDF pages that are scans and whose text was not supplied (ExtractOptions.ocr): OCR them, then extract again. */
  needsOcr?: number[];
};

/** The recognised text of one page (core/ingest/ocr/provider.ts). */
export type PageText = { page: number; text: string; confidence: number };

export type ExtractionFailureReason =
  | 'encrypted' | 'corrupt' | 'empty' | 'type_mismatch' | 'unsupported'
  /** Over a limit of the extraction process (CPU time, memory) or of expansion (inflated bytes, pages, records). */
  | 'limit';

const PUBLIC_MESSAGES: Record<ExtractionFailureReason, string> = {
  encrypted: 'The PDF is password-protected; upload a copy without a password.',
  corrupt: 'The file could not be read; it may be damaged or incomplete.',
  empty: 'The document contains no extractable text.',
  type_mismatch: 'The file content does not match the declared content type.',
  unsupported: 'This content type is not supported.',
  limit: 'The document exceeds a processing limit.',
};

/**
 * Why a document could not be extracted. `publicMessage` is safe to show users; `message` may carry
 * internal detail for logs.
 */
export class ExtractionError extends Error {
  readonly reason: ExtractionFailureReason;
  readonly publicMessage: string;
  constructor(reason: ExtractionFailureReason, publicMessage?: string, options?: { detail?: string; cause?: unknown }) {
    const pub = publicMessage ?? PUBLIC_MESSAGES[reason];
    super(options?.detail ? `${pub} (${options.detail})` : pub, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ExtractionError';
    this.reason = reason;
    this.publicMessage = pub;
  }
}

/** What every format extractor returns before the structure-only decision. */
export type RawExtraction = {
  title: string | null;
  text: string;
  sections: Section[];
  links: DocLink[];
  pages: number | null;
  warnings: string[];
  /** Set when the extractor already knows the text is over the preview limit and stopped early. */
  overLimit?: boolean;
  /** Heading paths of the whole document, used for a structure-only preview. */
  outline: OutlineEntry[];
  needsOcr?: number[];
};

export type OutlineEntry = { path: string[]; page?: number; level?: number };

/** Bounds on what one document may expand to (issue 24): each refusal names its limit. */
export type ExpansionLimits = {
  /** Pages of a PDF. */
  maxPdfPages: number;
  /** Bytes the PDF's compressed streams may inflate to, in all. */
  maxInflatedBytes: number;
  /** Characters of extracted text. */
  maxTextChars: number;
};

export const UNLIMITED: ExpansionLimits = {
  maxPdfPages: Number.POSITIVE_INFINITY,
  maxInflatedBytes: Number.POSITIVE_INFINITY,
  maxTextChars: Number.POSITIVE_INFINITY,
};

export type ExtractContext = {
  /** Text size above which a preview may stop at structure; Infinity for live processing. */
  limit: number;
  sourceUrl?: string;
  limits: ExpansionLimits;
  /** Recognised text of scanned PDF pages, by page number. */
  ocr?: ReadonlyMap<number, string>;
};

export const overLimit = (what: string) => new ExtractionError('limit', `The document exceeds a processing limit: ${what}.`);
