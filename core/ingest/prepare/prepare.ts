/**
 * The pure part of an ingest job's build step and of a dry run: bytes in, the source's text, records
 * (with their deterministic ids) and plan out. Runs in the extraction processes
 * (../extraction/task.ts), never on an event loop that serves requests or workflow tasks; nothing here
 * touches the database.
 */
import { deterministicUuid } from '../../../platform/ids.ts';
import {
  extract,
  overLimit,
  PREVIEW_TEXT_LIMIT,
  type ExpansionLimits,
  type PageText,
  type Section,
  type SupportedContentType,
} from '../extract/index.ts';
import { lexiconWords } from './lexicon.ts';
import { decideQuarantine, type QuarantineDecision } from './quarantine.ts';
import { contentHash } from '../../../platform/hash.ts';
import { buildRecords, type Link, type RecordSet } from './records.ts';

/** How far one source may expand (INGEST_MAX_PDF_PAGES, INGEST_MAX_EXPANSION, INGEST_MAX_RECORDS_PER_KB). */
import type { IngestLimits } from '../../../platform/config.ts';

/** Every source may expand this far, however small: the ratios only bound large ones. */
const MIN_STORED_CHARS = 4 * 1_048_576;
const MIN_INFLATED_BYTES = 64 * 1_048_576;
const MIN_RECORDS = 5_000;

/** The bounds for a source of `size` bytes. */
export function expansionLimits(size: number, limits: IngestLimits): ExpansionLimits & { maxStoredChars: number; maxRecords: number } {
  const stored = Math.max(MIN_STORED_CHARS, limits.maxExpansion * size);
  return {
    maxPdfPages: limits.maxPdfPages,
    maxInflatedBytes: Math.max(MIN_INFLATED_BYTES, limits.maxExpansion * size),
    maxTextChars: stored,
    maxStoredChars: stored,
    maxRecords: Math.max(MIN_RECORDS, Math.floor((limits.maxRecordsPerKb * size) / 1024)),
  };
}

export type RecordRow = {
  id: string; kind: string; text: string; start_offset: number; end_offset: number; section_path: string[]; page: number | null;
  subject: string | null; link_type: string | null; link_from: string | null; link_to: string | null; content_hash: string;
};

export type RecordCounts = { sourceExcerpts: number; facts: number; links: number; total: number };

export type PreparedSource = {
  title: string | null;
  text: string;
  textHash: string;
  sections: Section[];
  rows: RecordRow[];
  counts: RecordCounts;
  quarantine: QuarantineDecision;
  /** The new words of the account's lexicon (core/ingest/prepare/lexicon.ts). */
  words: string[];
};

/** A PDF with scanned pages whose text was not supplied: OCR these pages and prepare again with their text. */
export type NeedsOcr = { needsOcr: number[] };
const scanned = (pages: number[]): NeedsOcr => ({ needsOcr: pages });

/** The page of each offset of a document's text, from its sections (null outside paged documents). */
function pageFinder(sections: Section[]): (offset: number) => number | null {
  const paged = sections.filter((s) => s.page !== undefined);
  return (offset) => {
    let lo = 0;
    let hi = paged.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1;
      const s = paged[mid]!;
      if (offset < s.start) hi = mid - 1;
      else if (offset >= s.end) lo = mid + 1;
      else return s.page!;
    }
    return null;
  };
}

/** Extracts the bytes of a job and builds its records, within the expansion limits. */
export async function prepareSource(input: {
  jobId: string;
  bytes: Uint8Array;
  contentType: SupportedContentType;
  sourceUrl?: string;
  crossSiteRedirect: boolean;
  limits: IngestLimits;
  ocr?: PageText[];
}): Promise<PreparedSource | NeedsOcr> {
  const bounds = expansionLimits(input.bytes.byteLength, input.limits);
  // extract() refuses content that is not what its type says with assertContentMatches()'s own checks
  // and errors: checking first would decode (or parse) the whole document twice.
  const doc = await extract(input.bytes, input.contentType, { sourceUrl: input.sourceUrl, limits: bounds, ocr: input.ocr });
  if (doc.needsOcr) return scanned(doc.needsOcr);
  const pageAt = pageFinder(doc.sections);
  const records = buildRecords(doc);
  const counts = countsOf(records);
  if (counts.total > bounds.maxRecords) {
    throw overLimit(`it makes ${counts.total.toLocaleString('en-US')} records, more than ${bounds.maxRecords.toLocaleString('en-US')} for its size`);
  }
  let stored = doc.text.length;
  for (const list of [records.excerpts, records.facts, records.links]) for (const r of list) stored += r.text.length;
  if (stored > bounds.maxStoredChars) {
    throw overLimit(`it expands to ${stored.toLocaleString('en-US')} characters of text and records, more than ${bounds.maxStoredChars.toLocaleString('en-US')} for its size`);
  }
  const rows = rowsOf(input.jobId, records, pageAt);
  return {
    title: doc.title,
    text: doc.text,
    textHash: contentHash(doc.text),
    sections: doc.sections,
    rows,
    counts,
    quarantine: decideQuarantine(doc, records, { crossSiteRedirect: input.crossSiteRedirect }),
    words: lexiconWords(records.excerpts.map((e) => e.text)),
  };
}

/**
 * The rows of a source's records, built in one pass (no intermediate copies of every record). Two
 * records of one span and kind are one record: the later one, in the place of the first.
 */
function rowsOf(jobId: string, records: RecordSet, pageAt: (offset: number) => number | null): RecordRow[] {
  const rows: RecordRow[] = [];
  const indexOf = new Map<string, number>();
  const add = (r: { kind: string; text: string; start: number; end: number }, sectionPath: string[], subject: string | null, link: Link | null) => {
    const id = deterministicUuid(`${jobId}:${r.kind}:${r.start}:${r.end}:${link?.to || ''}:${link?.from || ''}`);
    const row: RecordRow = {
      id,
      kind: r.kind,
      text: r.text,
      start_offset: r.start,
      end_offset: r.end,
      section_path: sectionPath,
      // Every record of a paged document cites the page it starts on.
      page: pageAt(r.start),
      subject,
      link_type: link ? link.linkType : null,
      link_from: link ? link.from : null,
      link_to: link ? link.to : null,
      content_hash: contentHash(r.text),
    };
    const at = indexOf.get(id);
    if (at === undefined) indexOf.set(id, rows.push(row) - 1);
    else rows[at] = row;
  };
  for (const e of records.excerpts) add(e, e.sectionPath, null, null);
  for (const f of records.facts) add(f, f.sectionPath, f.subject ?? null, null);
  for (const l of records.links) add(l, [], null, l);
  return rows;
}

function countsOf(records: ReturnType<typeof buildRecords>): RecordCounts {
  const counts = { sourceExcerpts: records.excerpts.length, facts: records.facts.length, links: records.links.length };
  return { ...counts, total: counts.sourceExcerpts + counts.facts + counts.links };
}

/** Bytes to preview: their type, the URL they came from, and the text of pages recognised already. */
export type Previewable = { bytes: Uint8Array; contentType: SupportedContentType; finalUrl: string | null; ocr?: PageText[] };

/** The plan of a dry run: what live processing would make of these bytes. Persists nothing. */
export async function planOf({ bytes, contentType, finalUrl, ocr }: Previewable, limits: IngestLimits) {
  // As in prepareSource, extract() does assertContentMatches()'s checks.
  const doc = await extract(bytes, contentType, {
    structureOnlyAboveChars: PREVIEW_TEXT_LIMIT,
    sourceUrl: finalUrl ?? undefined,
    limits: expansionLimits(bytes.byteLength, limits),
    ocr,
  });
  if (doc.needsOcr) return scanned(doc.needsOcr);
  const counts = countsOf(buildRecords(doc));
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
    // The built-in extractor needs no provider and costs no credits; OCR's cost is added by the caller.
    estimatedCredits: 0,
    warnings: doc.warnings,
  };
}

export type Plan = Exclude<Awaited<ReturnType<typeof planOf>>, NeedsOcr>;

