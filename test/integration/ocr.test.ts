import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bytesSource } from '../../core/ingest/extraction/parts.ts';
import { createExtractionPool, type ExtractionPool } from '../../core/ingest/extraction/pool.ts';
import type { PreparedSource } from '../../core/ingest/prepare/prepare.ts';
import { proseLines, scannedPdf } from '../helpers/scanned-pdf.ts';

// The local OCR provider in real extraction processes, on scanned PDFs made in setup.

const LIMITS = { maxPdfPages: 2000, maxExpansion: 20, maxRecordsPerKb: 128 };
let pool: ExtractionPool;
let mixed: Buffer;
beforeAll(async () => {
  pool = createExtractionPool({ processes: 1, cpuSeconds: 60, memoryMb: 1024, limits: LIMITS });
  // Page 1 has a text layer, page 2 is a scan, page 3 is blank, page 4 is a scan.
  mixed = await scannedPdf([1, 2, 3, 4].map(proseLines), { textPages: [1], blankPages: [3] });
}, 60_000);
afterAll(() => pool?.close());

const build = (bytes: Buffer, ocr?: Parameters<ExtractionPool['build']>[1]['ocr']) =>
  pool.build('account-a', { jobId: '00000000-0000-4000-8000-000000000002', source: bytesSource(bytes), contentType: 'application/pdf', crossSiteRedirect: false, ocr });

describe('OCR of scanned PDF pages', () => {
  it('finds the scanned pages (not the blank one), recognises them, and every record cites its page', { timeout: 120_000 }, async () => {
    expect(await build(mixed)).toEqual({ needsOcr: [2, 4] });
    expect(await pool.preview('account-a', { bytes: mixed, contentType: 'application/pdf', finalUrl: null })).toEqual({ needsOcr: [2, 4] });

    const pages = await pool.ocr('account-a', mixed, [2, 4]);
    expect(pages.map((p) => p.page)).toEqual([2, 4]);
    for (const p of pages) {
      expect(p.text).toContain(`Ada Lovelace${p.page} counted ${100 + p.page} migrating terns`);
      expect(p.confidence).toBeGreaterThan(80);
    }

    const built = (await build(mixed, pages)) as PreparedSource;
    expect(built.rows.length).toBeGreaterThan(4);
    for (const row of built.rows) expect(row.page, `${row.kind} "${row.text}"`).not.toBeNull();
    for (const n of [1, 2, 4]) {
      const fact = built.rows.find((r) => r.kind === 'fact' && r.text.includes(`Kestrel${n} `));
      expect(fact?.page, `fact of page ${n}`).toBe(n);
    }
    expect(built.rows.some((r) => r.page === 3)).toBe(false);

    const plan = await pool.preview('account-a', { bytes: mixed, contentType: 'application/pdf', finalUrl: null, ocr: pages });
    expect(plan).toMatchObject({ pages: 4, warnings: expect.arrayContaining(['Text of pages 2, 4 was recognised by OCR (scanned pages).', '1 of 4 pages have no extractable text (blank pages): 3.']) });
  });

  it('runs under the extraction limits: OCR over the CPU limit ends with a limit refusal', { timeout: 60_000 }, async () => {
    const tight = createExtractionPool({ processes: 1, cpuSeconds: 1, memoryMb: 1024, limits: LIMITS });
    try {
      await expect(tight.ocr('account-a', mixed, [2, 4])).rejects.toMatchObject({ reason: 'limit', publicMessage: 'Extraction exceeded its time limit of 1 s of CPU.' });
    } finally {
      await tight.close();
    }
  });
});
