import { describe, expect, it } from 'vitest';
import { ExtractionError, extract } from '../../core/ingest/extract/index.ts';
import { buildRecords } from '../../core/ingest/prepare/records.ts';
import { expectDocumentOffsets, expectRecordOffsets, fixture, utf8 } from '../fixtures/ingest/checks.ts';

async function reasonOf(p: Promise<unknown>) {
  try {
    await p;
  } catch (e) {
    expect(e).toBeInstanceOf(ExtractionError);
    return { reason: (e as ExtractionError).reason, publicMessage: (e as ExtractionError).publicMessage };
  }
  throw new Error('expected an ExtractionError');
}

describe('PDF extraction (multipage.pdf, generated with pdf-lib)', () => {
  it('extracts text per page with page sections, title and page count', async () => {
    const doc = await extract(fixture('multipage.pdf'), 'application/pdf');
    expectDocumentOffsets(doc);
    expect(doc.contentType).toBe('application/pdf');
    expect(doc.structureOnly).toBe(false);
    expect(doc.pages).toBe(4);
    expect(doc.title).toBe('Orlavik Field Station Report');
    // Page 4 is blank: no section, and a warning says so.
    expect(doc.sections.map((s) => [s.path, s.page])).toEqual([
      [['Page 1'], 1],
      [['Page 2'], 2],
      [['Page 3'], 3],
    ]);
    expect(doc.warnings).toEqual([expect.stringMatching(/^1 of 4 pages have no extractable text .*: 4\.$/)]);

    const page = (n: number) => {
      const s = doc.sections.find((x) => x.page === n)!;
      return doc.text.slice(s.start, s.end);
    };
    expect(page(1)).toContain('Orlavik Field Station Report');
    // A paragraph wrapped over several lines comes out as one line of text.
    expect(page(1)).toContain(
      'The Orlavik Field Station was established in 1987 on the northern shore of the fictional Brennmarsh estuary. ' +
        'It monitors migrating terns from April to September every year, and its volunteers count birds twice a day.',
    );
    expect(page(1)).not.toContain('lantern');
    expect(page(2)).toContain('The lantern number of project KestrelPDF42 is lantern5a5a5a5a5a.');
    expect(page(3).trim()).toBe('Raw counts are kept in the station archive.');
    // Title and body paragraphs are separate blocks.
    expect(doc.text.startsWith('Orlavik Field Station Report\n\nThe Orlavik Field Station')).toBe(true);
  });

  it('turns link annotations into hyperlinks over the text they cover', async () => {
    const doc = await extract(fixture('multipage.pdf'), 'application/pdf');
    expect(doc.links).toHaveLength(1);
    const [l] = doc.links;
    expect(l).toMatchObject({ href: 'https://archive.example.org/orlavik/2023', text: 'the station archive' });
    const page3 = doc.sections.find((s) => s.page === 3)!;
    expect(l!.start).toBeGreaterThanOrEqual(page3.start);
    expect(l!.end).toBeLessThanOrEqual(page3.end);
  });

  it('builds page-aware records', async () => {
    const doc = await extract(fixture('multipage.pdf'), 'application/pdf');
    const r = buildRecords(doc);
    expectRecordOffsets(doc, r);
    const fact = r.facts.find((f) => f.text === 'The lantern number of project KestrelPDF42 is lantern5a5a5a5a5a.');
    expect(fact).toMatchObject({ subject: 'KestrelPDF42', sectionPath: ['Page 2'] });
    for (const e of r.excerpts) {
      const s = doc.sections.find((x) => x.start <= e.start && e.end <= x.end)!;
      expect(e.page).toBe(s.page);
      expect(e.sectionPath).toEqual([`Page ${s.page}`]);
    }
    expect(new Set(r.excerpts.map((e) => e.page))).toEqual(new Set([1, 2, 3]));
    expect(r.links).toContainEqual(
      expect.objectContaining({ linkType: 'document', to: 'https://archive.example.org/orlavik/2023', text: 'the station archive' }),
    );
    // The title line is a heading, not a fact.
    expect(r.facts.map((f) => f.text)).not.toContain('Orlavik Field Station Report');
  });

  it('does not consume the caller’s bytes (pdf.js detaches the buffer it is given)', async () => {
    const bytes = fixture('multipage.pdf');
    const before = bytes.length;
    await extract(bytes, 'application/pdf');
    expect(bytes.length).toBe(before);
    expect(bytes[0]).toBe(0x25);
    // And the same array can be extracted again.
    expect((await extract(bytes, 'application/pdf')).pages).toBe(4);
  });

  it('reports a password-protected PDF as encrypted', async () => {
    const e = await reasonOf(extract(fixture('encrypted.pdf'), 'application/pdf'));
    expect(e.reason).toBe('encrypted');
    expect(e.publicMessage).toMatch(/password/i);
  });

  it('reports a truncated PDF as corrupt', async () => {
    const e = await reasonOf(extract(fixture('corrupt.pdf'), 'application/pdf'));
    expect(e.reason).toBe('corrupt');
    expect(e.publicMessage).not.toMatch(/Exception|xref/);
  });

  it('reports garbage after a PDF header as corrupt, and a non-PDF as a type mismatch', async () => {
    expect((await reasonOf(extract(utf8(`%PDF-1.7\n${'garbage '.repeat(200)}`), 'application/pdf'))).reason).toBe('corrupt');
    expect((await reasonOf(extract(utf8('%PDF-'), 'application/pdf'))).reason).toBe('corrupt');
    expect((await reasonOf(extract(fixture('broken.html'), 'application/pdf'))).reason).toBe('type_mismatch');
  });

  it('reports a PDF without any text as empty', async () => {
    const e = await reasonOf(extract(fixture('blank.pdf'), 'application/pdf'));
    expect(e.reason).toBe('empty');
    expect(e.publicMessage).toMatch(/no extractable text/);
  });
});
