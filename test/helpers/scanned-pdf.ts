import { PDFDocument, StandardFonts } from 'pdf-lib';
import { openPdf } from '../../core/ingest/extract/pdf.ts';
import { renderPage } from '../../core/ingest/extraction/tesseract.ts';

/**
 * Scanned PDFs made from text in test setup, with the project's own dependencies: each page's lines are
 * typeset by pdf-lib (Helvetica, 12 pt, letter size), rendered by pdf.js at 300 dpi (as the OCR
 * provider renders), and the picture alone placed on a page of a new PDF: no text layer, like a scan.
 * Pages in `textPages` (1-based) keep a text layer instead; `blankPages` are empty.
 */
export async function scannedPdf(pages: string[][], opts: { textPages?: number[]; blankPages?: number[] } = {}): Promise<Buffer> {
  const typeset = await PDFDocument.create();
  const font = await typeset.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = typeset.addPage([612, 792]);
    lines.forEach((line, i) => page.drawText(line, { x: 72, y: 720 - i * 18, size: 12, font }));
  }
  const typesetBytes = await typeset.save();
  const rendered = await openPdf(typesetBytes).promise;
  const out = await PDFDocument.create();
  const [textCopies, scans] = [await PDFDocument.load(typesetBytes), [] as Buffer[]];
  for (let n = 1; n <= pages.length; n++) scans.push((await renderPage(rendered, n)).toBuffer('image/png'));
  await rendered.destroy();
  for (let n = 1; n <= pages.length; n++) {
    if (opts.textPages?.includes(n)) {
      const [copy] = await out.copyPages(textCopies, [n - 1]);
      out.addPage(copy);
    } else if (opts.blankPages?.includes(n)) {
      out.addPage([612, 792]);
    } else {
      const image = await out.embedPng(scans[n - 1]!);
      out.addPage([612, 792]).drawImage(image, { x: 0, y: 0, width: 612, height: 792 });
    }
  }
  return Buffer.from(await out.save());
}

/** Lines of plain English prose for page `n` of a fixture (distinct words per page, for citing pages). */
export function proseLines(n: number): string[] {
  return [
    `Field report ${n}: the harbour of Orlavik was surveyed in spring.`,
    `Ada Lovelace${n} counted ${100 + n} migrating terns near the lighthouse.`,
    'The survey team recorded tides, winds and the colour of the water.',
    `Project Kestrel${n} was founded in ${1900 + n} by the harbour council.`,
  ];
}
