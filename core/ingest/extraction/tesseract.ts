/**
 * The local OCR provider's work, inside an extraction process (./task.ts): scanned PDF pages
 * are rendered with pdf.js onto a @napi-rs/canvas at 300 dpi, in grey, and recognised by tesseract.js with the
 * English LSTM model of @tesseract.js-data/eng, read from node_modules (nothing is downloaded). One
 * recogniser per process, started on its first page and kept for the process's next tasks.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import { createCanvas, type Canvas } from '@napi-rs/canvas';
import { createWorker, OEM, type Worker } from 'tesseract.js';
import { ExtractionError, type PageText } from '../extract/index.ts';
import { openPdf } from '../extract/pdf.ts';

/**
 * The integer-quantised LSTM model (what tesseract.js itself fetches for LSTM-only recognition): in
 * the package, next to the larger legacy-and-LSTM file, and faster here on the same pages.
 */
const ENGLISH = path.join(path.dirname(createRequire(import.meta.url).resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
const DPI = 300;
/** A page larger than this many pixels at 300 dpi (an A2 sheet) is rendered at a lower resolution. */
const MAX_PIXELS = 35_000_000;

let recogniser: Promise<Worker> | null = null;
const recogniserOf = () => (recogniser ??= createWorker('eng', OEM.LSTM_ONLY, { langPath: ENGLISH, gzip: true, cacheMethod: 'none' }));

/** Renders one page at 300 dpi (white behind it, as on paper). */
export async function renderPage(pdf: Awaited<ReturnType<typeof openPdf>['promise']>, n: number): Promise<Canvas> {
  const page = await pdf.getPage(n);
  const base = page.getViewport({ scale: 1 });
  const scale = Math.min(DPI / 72, Math.sqrt(MAX_PIXELS / (base.width * base.height)));
  const viewport = page.getViewport({ scale });
  const canvas = createCanvas(Math.ceil(viewport.width), Math.ceil(viewport.height));
  const context = canvas.getContext('2d');
  context.fillStyle = 'white';
  context.fillRect(0, 0, canvas.width, canvas.height);
  await page.render({ canvas: canvas as never, canvasContext: context as never, viewport }).promise;
  page.cleanup();
  return canvas;
}

/**
 * The picture as an 8-bit grey PGM: what tesseract reads fastest (no PNG to encode here and decode in
 * WebAssembly: about a fifth less time per page, the same text).
 */
export function greyPgm(canvas: Canvas): Buffer {
  const { width, height } = canvas;
  const rgba = canvas.getContext('2d').getImageData(0, 0, width, height).data;
  const header = Buffer.from(`P5\n${width} ${height}\n255\n`);
  const out = Buffer.allocUnsafe(header.length + width * height);
  header.copy(out);
  for (let i = 0, j = header.length; j < out.length; i += 4, j++) out[j] = (rgba[i]! * 77 + rgba[i + 1]! * 150 + rgba[i + 2]! * 29) >> 8;
  return out;
}

/** Recognises the text of `pages` (1-based) of a PDF, in the order given. */
export async function recognisePages(bytes: Uint8Array, pages: number[]): Promise<PageText[]> {
  const task = openPdf(bytes);
  try {
    const pdf = await task.promise.catch((e: unknown) => {
      throw new ExtractionError('corrupt', 'The PDF could not be read; it may be damaged or incomplete.', { cause: e });
    });
    const worker = await recogniserOf();
    const out: PageText[] = [];
    for (const n of pages) {
      if (!Number.isInteger(n) || n < 1 || n > pdf.numPages) throw new ExtractionError('corrupt', `The PDF has no page ${n}.`);
      const { data } = await worker.recognize(greyPgm(await renderPage(pdf, n)));
      out.push({ page: n, text: data.text.trim(), confidence: Math.round(data.confidence) });
    }
    return out;
  } finally {
    await task.destroy();
  }
}
