/**
 * The local OCR provider's work, inside an extraction process (../extraction-task.ts): scanned PDF pages
 * are rendered with pdf.js onto a @napi-rs/canvas at 300 dpi and recognised by tesseract.js with the
 * English model of @tesseract.js-data/eng, read from node_modules (nothing is downloaded). One
 * recogniser per process, started on its first page and kept for the process's next tasks.
 */
import { createRequire } from 'node:module';
import { createCanvas } from '@napi-rs/canvas';
import { createWorker, OEM, type Worker } from 'tesseract.js';
import { ExtractionError, type PageText } from '../extract/index.ts';
import { openPdf } from '../extract/pdf.ts';

const ENGLISH = (createRequire(import.meta.url)('@tesseract.js-data/eng') as { langPath: string }).langPath;
const DPI = 300;
/** A page larger than this many pixels at 300 dpi (an A2 sheet) is rendered at a lower resolution. */
const MAX_PIXELS = 35_000_000;

let recogniser: Promise<Worker> | null = null;
const recogniserOf = () => (recogniser ??= createWorker('eng', OEM.LSTM_ONLY, { langPath: ENGLISH, gzip: true, cacheMethod: 'none' }));

/** Renders one page as a PNG at 300 dpi (white behind it, as on paper). */
export async function renderPage(pdf: Awaited<ReturnType<typeof openPdf>['promise']>, n: number): Promise<Buffer> {
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
  return canvas.toBuffer('image/png');
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
      const { data } = await worker.recognize(await renderPage(pdf, n));
      out.push({ page: n, text: data.text.trim(), confidence: Math.round(data.confidence) });
    }
    return out;
  } finally {
    await task.destroy();
  }
}
