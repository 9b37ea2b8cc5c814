import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { gunzipSync } from 'node:zlib';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { openPdf } from '../../core/ingest/extract/pdf.ts';
import { createExtractionPool } from '../../core/ingest/extraction/pool.ts';
import { greyPgm, renderPage } from '../../core/ingest/extraction/tesseract.ts';
import { scannedPdf } from '../../test/helpers/scanned-pdf.ts';
import type { Benchmark, BenchOutput } from '../lib/benchmark.ts';
import { median, round } from '../lib/stats.ts';

// Issue 29: the local OCR provider (tesseract.js in an extraction process: pdf.js renders the page at
// 300 dpi, tesseract.js reads it) against Debian's native tesseract CLI on the same pages, both on one
// core, and the word accuracy of each against the text the pages were typeset from.

const run = promisify(execFile);
const PAGES = 6;
const LINES = 30;
/** Rounds of both, alternating, so that load from elsewhere falls on both alike; medians are reported. */
const ROUNDS = 3;

/** Deterministic English prose: sentences from a small grammar, seeded per page. */
function prose(page: number): string[] {
  const subjects = ['The harbour council', 'A survey team', 'The lighthouse keeper', 'Our field station', 'The ferry company', 'A local historian', 'The weather office', 'Every fisherman'];
  const verbs = ['recorded', 'measured', 'reported', 'described', 'counted', 'mapped', 'studied', 'noted'];
  const objects = ['the spring tides', 'migrating terns', 'the northern reef', 'winter storms', 'the old quay', 'salt marsh plants', 'water temperature', 'the shipping lanes'];
  const tails = ['near Orlavik', 'in March', 'after the storm', 'for the annual report', 'along the coast', 'before sunrise', 'with great care', 'during the survey'];
  let seed = page * 7919;
  const pick = <T>(xs: T[]) => xs[(seed = (seed * 1103515245 + 12345) % 2147483648) % xs.length]!;
  return Array.from({ length: LINES }, (_, i) => `${pick(subjects)} ${pick(verbs)} ${pick(objects)} ${pick(tails)}, entry ${page * 100 + i}.`);
}

const words = (text: string) => text.split(/\s+/).map((w) => w.replace(/^[^\p{L}\p{N}]+|[^\p{L}\p{N}]+$/gu, '')).filter(Boolean);

/** Share of the source's words the OCR got right: 1 - word edit distance / source words. */
function wordAccuracy(source: string, ocr: string): number {
  const a = words(source);
  const b = words(ocr);
  let prev = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const cur = [i];
    for (let j = 1; j <= b.length; j++) cur[j] = Math.min(prev[j]! + 1, cur[j - 1]! + 1, prev[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    prev = cur;
  }
  return Math.max(0, 1 - prev[b.length]! / a.length);
}

/** Debian's tesseract CLI, installed with apt-get when it is missing. */
async function nativeTesseract(log: (m: string) => void): Promise<string> {
  const found = await run('tesseract', ['--version']).then((r) => r.stdout.split('\n')[0]!, () => null);
  if (found) return found;
  log('installing tesseract-ocr (apt-get)');
  await run('apt-get', ['update', '-q']);
  await run('apt-get', ['install', '-y', '-q', 'tesseract-ocr'], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return (await run('tesseract', ['--version'])).stdout.split('\n')[0]!;
}

export const ocr: Benchmark = {
  name: 'ocr',
  title: 'OCR of scanned pages: tesseract.js in the extraction pool vs native tesseract',
  description:
    `Scanned letter pages (${LINES} lines of 12 pt Helvetica prose each, typeset by pdf-lib, rendered at 300 dpi, wrapped image-only in a PDF) ` +
    'are read by the local OCR provider (an extraction process: pdf.js renders each page at 300 dpi, tesseract.js with @tesseract.js-data/eng ' +
    "recognises it) and by Debian's tesseract CLI (tesseract-ocr, one process per page, OMP_THREAD_LIMIT=1) on the same renders (grey PGM files, as the provider hands them to tesseract.js). " +
    'Pages per second after start-up (the provider keeps its recogniser between tasks) and word accuracy against the typeset text.',
  async run({ quick, log }): Promise<BenchOutput> {
    const pages = quick ? 1 : PAGES;
    const texts = Array.from({ length: pages }, (_, i) => prose(i + 1));
    const pdf = await scannedPdf(texts);
    const version = await nativeTesseract(log);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-ocr-'));
    const pool = createExtractionPool({ processes: 1, cpuSeconds: 3600, memoryMb: 2048, limits: { maxPdfPages: 2000, maxExpansion: 20, maxRecordsPerKb: 128 } });
    try {
      // The native side gets its pages the way the provider does (pdf.js at 300 dpi, grey PGM), timed in
      // every round, so both sides go from a PDF page to its text.
      const images = Array.from({ length: pages }, (_, i) => path.join(dir, `page-${i + 1}.pgm`));
      const renderAll = async () => {
        const doc = await openPdf(pdf).promise;
        for (let n = 1; n <= pages; n++) await writeFile(images[n - 1]!, greyPgm(await renderPage(doc, n)));
        await doc.destroy();
      };

      let t = performance.now();
      await pool.ocr('bench', pdf, [1]);
      const startupSeconds = (performance.now() - t) / 1000;
      // The provider's own model for the native CLI too: the same network, native code against WebAssembly.
      const sameModel = path.join(dir, 'tessdata');
      await mkdir(sameModel);
      const modelDir = path.join(path.dirname(createRequire(import.meta.url).resolve('@tesseract.js-data/eng/package.json')), '4.0.0_best_int');
      await writeFile(path.join(sameModel, 'eng.traineddata'), gunzipSync(await readFile(path.join(modelDir, 'eng.traineddata.gz'))));
      const nativeOcr = async (extra: string[]) => {
        const out: string[] = [];
        for (const file of images) {
          out.push((await run('tesseract', [file, '-', '-l', 'eng', ...extra], { env: { ...process.env, OMP_THREAD_LIMIT: '1' }, maxBuffer: 16 << 20 })).stdout);
        }
        return out;
      };

      const numbers = Array.from({ length: pages }, (_, i) => i + 1);
      const oursRuns: number[] = [];
      const nativeRuns: number[] = [];
      const renderRuns: number[] = [];
      const sameModelRuns: number[] = [];
      let ours: Awaited<ReturnType<typeof pool.ocr>> = [];
      let native: string[] = [];
      for (let round = 0; round < (quick ? 1 : ROUNDS); round++) {
        t = performance.now();
        ours = await pool.ocr('bench', pdf, numbers);
        oursRuns.push((performance.now() - t) / 1000);
        t = performance.now();
        await renderAll();
        renderRuns.push((performance.now() - t) / 1000);
        t = performance.now();
        native = await nativeOcr([]);
        nativeRuns.push((performance.now() - t) / 1000);
        t = performance.now();
        await nativeOcr(['--tessdata-dir', sameModel, '--oem', '1']);
        sameModelRuns.push((performance.now() - t) / 1000);
      }
      const oursSeconds = median(oursRuns);
      const nativeSeconds = median(nativeRuns.map((r, i) => r + renderRuns[i]!));
      const nativeCliRate = round(pages / median(nativeRuns));
      const sameModelRate = round(pages / median(sameModelRuns));

      const accuracy = (got: string[]) => round((100 * got.reduce((s, g, i) => s + wordAccuracy(texts[i]!.join('\n'), g), 0)) / pages);
      const oursRate = round(pages / oursSeconds);
      const nativeRate = round(pages / nativeSeconds);
      const oursAccuracy = accuracy(ours.map((p) => p.text));
      const nativeAccuracy = accuracy(native);
      log(`tesseract.js ${oursRate} pages/s (${oursAccuracy}% words), native ${nativeRate} pages/s (${nativeAccuracy}% words)`);
      return {
        settings: { pages, linesPerPage: LINES, dpi: 300, rounds: oursRuns.length, native: version, threads: 1 },
        metrics: [
          {
            id: 'ocr.pagesPerSecond', label: 'Local OCR provider: PDF pages to text per second (render + recognise)', value: oursRate, unit: 'pages/s',
            baseline: { label: 'the same render + native tesseract CLI', value: nativeRate, kind: 'baseline' }, ratio: round(oursRate / nativeRate),
            target: { op: '>=', value: 0.7, text: '>= 0.7x native', of: 'ratio' },
          },
          { id: 'ocr.wordAccuracy', label: 'Local OCR provider: word accuracy', value: oursAccuracy, unit: '%', target: { op: '>=', value: 95, text: '>= 95%' } },
          { id: 'ocr.native.wordAccuracy', label: 'Native tesseract: word accuracy', value: nativeAccuracy, unit: '%' },
          { id: 'ocr.native.cliAlone', label: 'Native tesseract CLI alone on the rendered pages: pages per second', value: nativeCliRate, unit: 'pages/s' },
          {
            id: 'ocr.native.sameModel', label: "Native tesseract with the provider's model (4.0.0_best_int): pages per second", value: sameModelRate, unit: 'pages/s',
            baseline: { label: 'native tesseract CLI alone, Debian model', value: nativeCliRate, kind: 'baseline' }, ratio: round(sameModelRate / nativeCliRate),
          },
          { id: 'ocr.startup', label: 'Local OCR provider: first page including start-up', value: round(startupSeconds), unit: 's' },
        ],
        notes: [
          'Both sides go from a PDF page to its text: the provider renders each page with pdf.js inside its extraction process; the native side gets the same render (pdf.js, 300 dpi, grey PGM, timed in every round) and then runs the CLI. The CLI alone on rendered pages is its own row.',
          'Both run on one core: tesseract.js recognises in one WebAssembly thread; the native CLI is limited with OMP_THREAD_LIMIT=1.',
          "Models differ: Debian's tesseract-ocr-eng is the smaller tessdata_fast network; @tesseract.js-data/eng ships only the integer 'best' networks, larger and slower. The native CLI with the provider's model separates the two causes: native code against WebAssembly on the same network.",
        ],
        runs: { oursSeconds: oursRuns.map(round), renderSeconds: renderRuns.map(round), nativeCliSeconds: nativeRuns.map(round), nativeSameModelSeconds: sameModelRuns.map(round), perPageAccuracy: ours.map((p, i) => round(100 * wordAccuracy(texts[i]!.join('\n'), p.text))) },
      };
    } finally {
      await pool.close();
      await rm(dir, { recursive: true, force: true });
    }
  },
};
