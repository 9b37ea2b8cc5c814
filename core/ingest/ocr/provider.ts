/**
 * The text provider interface: what turns pages that carry no text layer (scans) into text. Small on
 * purpose, so a remote extraction service can be added beside the local OCR: it gets the document's
 * bytes and the pages to read, and answers with each page's text. Billing, budgets, batching, retries
 * and storage stay with the callers (./preview.ts for dry runs, ./live.ts for ingest jobs), which treat
 * every provider alike. docs/decisions/0008-ocr-text-providers.md describes the contract.
 */
import type { PageText } from '../extract/index.ts';
import type { ExtractionPool } from '../extraction/pool.ts';

export type { PageText };

export type TextProvider = {
  /** Shown in logs and warnings. */
  readonly name: string;
  /** Credits one page costs (OCR_CREDITS_PER_PAGE for the local provider). */
  readonly creditsPerPage: number;
  /**
   * The text of `pages` (1-based) of a PDF. Throws ExtractionError when the document cannot be read or
   * a limit stops the work; any answer is checked by verifiedPages before it is used or billed.
   */
  recognise(accountId: string, bytes: Uint8Array, pages: number[]): Promise<PageText[]>;
};

/** The local provider: tesseract.js in the extraction processes, under their CPU and memory limits. */
export function localOcrProvider(pool: ExtractionPool, creditsPerPage: number): TextProvider {
  return { name: 'tesseract', creditsPerPage, recognise: (accountId, bytes, pages) => pool.ocr(accountId, bytes, pages) };
}

/** Longest text accepted for one page: a dense A4 page holds about 6,000 characters. */
const MAX_PAGE_CHARS = 100_000;

/** A provider answer that is exactly one text per page asked for, or null (its outcome cannot be trusted). */
export function verifiedPages(asked: number[], got: PageText[]): PageText[] | null {
  if (got.length !== asked.length) return null;
  const byPage = new Map(got.map((p) => [p.page, p]));
  const out: PageText[] = [];
  for (const n of asked) {
    const p = byPage.get(n);
    if (!p || typeof p.text !== 'string' || p.text.length > MAX_PAGE_CHARS || !Number.isFinite(p.confidence)) return null;
    out.push({ page: n, text: p.text, confidence: Math.round(p.confidence) });
  }
  return out;
}
