/**
 * PDF text per page with pdf.js (legacy build for Node; no canvas, no eval, no font loading). Text
 * items are joined into lines and paragraphs by their positions; every page with text becomes one
 * section (path ["Page N"], page N). Link annotations with a URL become hyperlinks over the text
 * they cover.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import zlib from 'node:zlib';
import { getDocument, OPS, VerbosityLevel, type PDFDocumentProxy, type PDFPageProxy } from 'pdfjs-dist/legacy/build/pdf.mjs';
import { DocumentBuilder, InlineBuffer, collapseWhitespace, resolveHref, type InlineText } from './builder.ts';
import { ExtractionError, overLimit as limitError, type ExtractContext, type OutlineEntry, type RawExtraction } from './types.ts';

const pdfjsDir = path.dirname(createRequire(import.meta.url).resolve('pdfjs-dist/package.json'));
const STANDARD_FONTS = `${path.join(pdfjsDir, 'standard_fonts')}${path.sep}`;
const CMAPS = `${path.join(pdfjsDir, 'cmaps')}${path.sep}`;

type Item = { str: string; transform: number[]; width: number; height: number; hasEOL: boolean };
/** A link annotation and the page text it covers (pdf.js reports it as overlaidText). */
type PageLink = { href: string; text: string };

const pageLabel = (n: number) => `Page ${n}`;

/** Groups positioned text items into paragraphs. */
export function layoutPage(items: Item[]): InlineText[] {
  const paragraphs: InlineText[] = [];
  const buf = new InlineBuffer();
  let prev: { x: number; y: number; w: number; size: number; str: string; eol: boolean } | null = null;
  let blankLine = false;
  let last = '';
  const endParagraph = () => {
    const p = buf.finish();
    if (p.text) paragraphs.push(p);
    last = '';
  };
  for (const it of items) {
    const t = it.transform;
    const size = Math.hypot(t[2] ?? 0, t[3] ?? 0) || Math.hypot(t[0] ?? 0, t[1] ?? 0) || it.height || 10;
    const x = t[4] ?? 0;
    const y = t[5] ?? 0;
    if (it.str === '' || /^\s*$/.test(it.str)) {
      // Whitespace-only items: an end-of-line marker after an end of line is a blank line.
      if (it.hasEOL && prev?.eol) blankLine = true;
      if (prev && it.hasEOL) prev.eol = true;
      else if (prev && it.str) buf.append(' ');
      continue;
    }
    if (prev) {
      const lineHeight = Math.max(size, prev.size);
      const sameLine = !prev.eol && Math.abs(y - prev.y) <= lineHeight * 0.5;
      if (!sameLine) {
        const drop = prev.y - y;
        const sizeChange = Math.abs(size - prev.size) > 0.2 * Math.max(size, prev.size);
        if (blankLine || drop > lineHeight * 1.75 || drop < -lineHeight * 0.5 || sizeChange) {
          endParagraph();
        } else if (!/\p{L}-$/u.test(last)) {
          buf.append(' ');
        }
      } else if (x - (prev.x + prev.w) > size * 0.15 && !/\s$/.test(last) && !/^\s/.test(it.str)) {
        buf.append(' ');
      }
    }
    blankLine = false;
    buf.append(it.str);
    last = it.str;
    prev = { x, y, w: it.width, size, str: it.str, eol: it.hasEOL };
  }
  endParagraph();
  return paragraphs;
}

/** Marks each link's text (the first occurrence not yet linked) in the page's paragraphs. */
function attachLinks(paragraphs: InlineText[], links: PageLink[]) {
  for (const l of links) {
    for (const p of paragraphs) {
      let at = p.text.indexOf(l.text);
      while (at >= 0 && p.links.some((x) => x.start < at + l.text.length && at < x.end)) at = p.text.indexOf(l.text, at + 1);
      if (at >= 0) {
        p.links.push({ href: l.href, start: at, end: at + l.text.length });
        p.links.sort((a, b) => a.start - b.start);
        break;
      }
    }
  }
}

function describePages(pages: number[]): string {
  const shown = pages.slice(0, 10).join(', ');
  return pages.length > 10 ? `${shown} and ${pages.length - 10} more` : shown;
}

function failure(e: unknown): ExtractionError {
  const name = (e as { name?: string } | null)?.name ?? '';
  const message = (e as { message?: string } | null)?.message ?? String(e);
  if (name === 'PasswordException') return new ExtractionError('encrypted', undefined, { detail: message, cause: e });
  return new ExtractionError('corrupt', 'The PDF could not be read; it may be damaged or incomplete.', {
    detail: `${name || 'Error'}: ${message}`.slice(0, 300),
    cause: e,
  });
}

const STREAM = Buffer.from('stream');
const IMAGE_DICT = /\/Subtype\s*\/Image\b/;

/**
 * Refuses a PDF whose Flate-compressed streams inflate to more than `max` bytes in all, before pdf.js
 * inflates any of them (it keeps each decoded stream whole: one 256 MiB content stream took the
 * worker to 2.5 GB). Each stream is inflated by zlib with an output bound, and the bytes are dropped at
 * once. Images are skipped: text extraction never decodes them. Streams with other filters are bounded
 * by the extraction process's memory limit instead.
 */
export function assertInflationWithin(bytes: Uint8Array, max: number): void {
  if (!Number.isFinite(max)) return;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let total = 0;
  for (let at = buf.indexOf(STREAM); at !== -1; at = buf.indexOf(STREAM, at + STREAM.length)) {
    // "endstream", or a word that merely ends in "stream".
    if (at > 0 && /[A-Za-z]/.test(String.fromCharCode(buf[at - 1]!))) continue;
    let start = at + STREAM.length;
    if (buf[start] === 0x0d) start++;
    if (buf[start] !== 0x0a && buf[start - 1] !== 0x0d) continue;
    if (buf[start] === 0x0a) start++;
    // A zlib header (deflate, and a check value that divides by 31), as pdf.js requires of Flate.
    const [cmf, flg] = [buf[start], buf[start + 1]];
    if (cmf === undefined || flg === undefined || (cmf & 0x0f) !== 8 || ((cmf << 8) | flg) % 31 !== 0) continue;
    const dict = buf.toString('latin1', Math.max(0, at - 1024), at);
    if (IMAGE_DICT.test(dict.slice(dict.lastIndexOf(' obj') + 1))) continue;
    let inflated: number;
    try {
      inflated = zlib.inflateSync(buf.subarray(start), { maxOutputLength: max - total + 1, finishFlush: zlib.constants.Z_SYNC_FLUSH }).byteLength;
    } catch (e) {
      if ((e as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') inflated = max - total + 1;
      else continue; // not a Flate stream after all (another filter first); pdf.js decides
    }
    total += inflated;
    if (total > max) throw limitError(`its compressed streams inflate to more than ${Math.round(max / 1_048_576)} MB`);
  }
}

/** Opens a PDF with pdf.js the one way Cairn does (no eval, no font loading, no worker fetch). */
export function openPdf(bytes: Uint8Array) {
  return getDocument({
    // pdf.js transfers (detaches) the buffer it is given: hand it a copy.
    data: new Uint8Array(bytes),
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
    useWorkerFetch: false,
    enableXfa: false,
    stopAtErrors: false,
    verbosity: VerbosityLevel.ERRORS,
    standardFontDataUrl: STANDARD_FONTS,
    cMapUrl: CMAPS,
    cMapPacked: true,
  });
}

/** A page with no text to extract needs OCR when it paints an image (a scan); otherwise it is blank. */
async function paintsImage(page: PDFPageProxy): Promise<boolean> {
  const ops = await page.getOperatorList();
  return ops.fnArray.some((fn) => IMAGE_OPS.has(fn));
}
const IMAGE_OPS = new Set<number>([OPS.paintImageXObject, OPS.paintInlineImageXObject, OPS.paintImageXObjectRepeat]);

/** OCR text as the page's paragraphs: blank lines separate them, a hyphen at a line's end joins the word. */
function ocrParagraphs(text: string): InlineText[] {
  return text
    .split(/\n\s*\n/)
    .map((p) => collapseWhitespace(p.replace(/(\p{L})-\n(\p{Ll})/gu, '$1$2')))
    .filter(Boolean)
    .map((t) => ({ text: t, links: [] }));
}

/** The title from the info dictionary, else from the XMP metadata. */
async function pdfTitle(pdf: PDFDocumentProxy): Promise<string | null> {
  try {
    const meta = await pdf.getMetadata();
    const info = meta.info as { Title?: unknown } | undefined;
    const t = typeof info?.Title === 'string' ? collapseWhitespace(info.Title) : '';
    const xmp = meta.metadata?.get('dc:title');
    return t || (typeof xmp === 'string' ? collapseWhitespace(xmp) : '') || null;
  } catch {
    // Broken metadata does not make the text unreadable: no title.
    return null;
  }
}

/** The page's link annotations that carry a web or mail URL over some text. */
async function pageLinks(page: PDFPageProxy): Promise<PageLink[]> {
  try {
    const annotations = (await page.getAnnotations({ intent: 'display' })) as {
      subtype?: string;
      url?: unknown;
      overlaidText?: unknown;
    }[];
    return annotations.flatMap((a) => {
      if (a.subtype !== 'Link' || typeof a.url !== 'string' || typeof a.overlaidText !== 'string') return [];
      const href = resolveHref(a.url, undefined);
      const text = collapseWhitespace(a.overlaidText);
      return href && text && /^(https?|mailto):/i.test(href) ? [{ href, text }] : [];
    });
  } catch {
    // Unreadable annotations only cost the page its links.
    return [];
  }
}

/** A page's text items and links, and whether it is a scan; null when pdf.js cannot read the page. */
async function readPage(
  pdf: PDFDocumentProxy,
  n: number,
  ocr: ExtractContext['ocr'],
): Promise<{ items: Item[]; links: PageLink[]; scanned: boolean } | null> {
  try {
    const page = await pdf.getPage(n);
    const links = await pageLinks(page);
    const content = await page.getTextContent();
    const items = content.items.filter((i): i is typeof i & Item => 'str' in i) as Item[];
    const scanned = !items.some((i) => i.str.trim()) && (ocr?.has(n) || (await paintsImage(page)));
    page.cleanup();
    return { items, links, scanned };
  } catch {
    return null;
  }
}

/** Pages by what became of them: text that could not be read, had none, or came from OCR. */
type PageFates = { failed: number[]; empty: number[]; ocr: number[] };

function pageWarnings({ failed, empty, ocr }: PageFates, numPages: number): string[] {
  const warnings: string[] = [];
  if (failed.length > 0) {
    warnings.push(`Could not read page${failed.length > 1 ? 's' : ''} ${describePages(failed)}; skipped.`);
  }
  if (empty.length > 0) {
    warnings.push(
      `${empty.length} of ${numPages} pages have no extractable text (blank pages): ${describePages(empty)}.`,
    );
  }
  if (ocr.length > 0) {
    warnings.push(`Text of page${ocr.length > 1 ? 's' : ''} ${describePages(ocr)} was recognised by OCR (scanned pages).`);
  }
  return warnings;
}

export async function extractPdf(bytes: Uint8Array, ctx: ExtractContext): Promise<RawExtraction> {
  assertInflationWithin(bytes, ctx.limits.maxInflatedBytes);
  const task = openPdf(bytes);
  try {
    let pdf;
    try {
      pdf = await task.promise;
    } catch (e) {
      throw failure(e);
    }
    const numPages = pdf.numPages;
    if (!(numPages > 0)) throw new ExtractionError('corrupt', 'The PDF has no pages.');
    if (numPages > ctx.limits.maxPdfPages) throw limitError(`it has ${numPages.toLocaleString('en-US')} pages, more than ${ctx.limits.maxPdfPages.toLocaleString('en-US')}`);
    const title = await pdfTitle(pdf);

    const b = new DocumentBuilder(ctx.limits.maxTextChars);
    const fates: PageFates = { failed: [], empty: [], ocr: [] };
    /** Scanned pages whose text was not supplied (ctx.ocr): the caller runs OCR on them and extracts again. */
    const scannedPages: number[] = [];
    let overLimit = false;
    let lastRead = 0;
    for (let n = 1; n <= numPages; n++) {
      if (b.length > ctx.limit) {
        overLimit = true;
        break;
      }
      lastRead = n;
      const page = await readPage(pdf, n, ctx.ocr);
      if (!page) {
        fates.failed.push(n);
        continue;
      }
      const recognised = page.scanned ? ctx.ocr?.get(n) : undefined;
      if (page.scanned && recognised === undefined) {
        scannedPages.push(n);
        continue;
      }
      if (recognised !== undefined) fates.ocr.push(n);
      const paragraphs = recognised === undefined ? layoutPage(page.items) : ocrParagraphs(recognised);
      attachLinks(paragraphs, page.links);
      if (paragraphs.length === 0) {
        fates.empty.push(n);
        continue;
      }
      b.startSection([pageLabel(n)], n);
      for (const p of paragraphs) b.block(p);
    }
    const built = b.finish();
    if (fates.failed.length === lastRead) {
      throw new ExtractionError('corrupt', 'The PDF could not be read; it may be damaged or incomplete.', {
        detail: `no page of ${numPages} could be read`,
      });
    }
    if (!built.text.trim() && scannedPages.length === 0) {
      throw new ExtractionError(
        'empty',
        'The PDF contains no extractable text.',
      );
    }
    const warnings = pageWarnings(fates, numPages);
    const outline: OutlineEntry[] = [];
    for (let n = 1; n <= numPages; n++) outline.push({ path: [pageLabel(n)], page: n, level: 1 });
    return {
      // A structural preview (over the text limit) needs no OCR.
      ...(scannedPages.length > 0 && !overLimit ? { needsOcr: scannedPages } : {}),
      title,
      text: built.text,
      sections: built.sections,
      links: built.links,
      pages: numPages,
      warnings,
      outline,
      overLimit: overLimit || built.text.length > ctx.limit,
    };
  } finally {
    await task.destroy();
  }
}
