import { describe, expect, it } from 'vitest';
import { ExtractionError, extract } from '../../core/ingest/extract/index.ts';
import { buildRecords } from '../../core/ingest/prepare/records.ts';
import { expectDocumentOffsets, expectRecordOffsets, fixture, utf8 } from '../fixtures/ingest/checks.ts';

const MARKERS = [
  'SCRIPT_MARKER',
  'STYLE_MARKER',
  'secret-style-marker',
  'trackingMarker',
  'NOSCRIPT_MARKER',
  'HIDDEN_MARKER',
  'font-family',
];

describe('HTML extraction (broken.html)', () => {
  const source = 'https://birds.example.org/notes/tern.html';

  it('keeps the main content and its headings, drops scripts, styles, hidden nodes and boilerplate', async () => {
    const doc = await extract(fixture('broken.html'), 'text/html', { sourceUrl: source });
    expectDocumentOffsets(doc);
    for (const m of MARKERS) expect(doc.text).not.toContain(m);
    // Navigation, cookie banner, sidebar and footer boilerplate.
    for (const b of ['About us', 'Donate', 'We use cookies', 'Related posts', 'Gulls of Orlavik', 'All rights reserved', 'Imprint']) {
      expect(doc.text).not.toContain(b);
    }
    expect(doc.title).toBe('Tern survey notes | Orlavik Birding Society');
    expect(doc.sections.map((s) => s.path)).toEqual([
      ['Tern survey notes'],
      ['Tern survey notes', 'Methods'],
      ['Tern survey notes', 'Methods', 'Equipment'],
      ['Tern survey notes', 'Results'],
    ]);
    expect(doc.text).toContain('The common tern is a seabird of the family Laridae.');
    expect(doc.text).toContain('The 2023 survey counted 1,204 breeding pairs, according to the annual colony report.');
    // Unclosed <li> and <td>: items and rows stay apart.
    expect(doc.text).toContain('Transect A covers the dunes.\n\nTransect B covers the salt marsh.');
    expect(doc.text).toContain('Year | Pairs\n2022 | 1,090\n2023 | 1,204');
    expect(doc.text).toContain('unclosed spans and emphasis');
    // Every heading section starts with its heading.
    for (const s of doc.sections) expect(doc.text.startsWith(s.path[s.path.length - 1]!, s.start)).toBe(true);
  });

  it('collects hyperlinks with anchor-text spans and absolute hrefs', async () => {
    const doc = await extract(fixture('broken.html'), 'text/html', { sourceUrl: source });
    expect(doc.links).toEqual([
      expect.objectContaining({ href: 'https://birds.example.org/reports/2023?src=notes#summary', text: 'annual colony report' }),
      expect.objectContaining({ href: 'https://birds.example.org/notes/methods.html', text: 'methods page' }),
    ]);
    const r = buildRecords(doc, { sourceUrl: source });
    expectRecordOffsets(doc, r);
    const docLinks = r.links.filter((l) => l.linkType === 'document');
    expect(docLinks.map((l) => [l.from, l.to, l.text])).toEqual([
      [source, 'https://birds.example.org/reports/2023?src=notes#summary', 'annual colony report'],
      [source, 'https://birds.example.org/notes/methods.html', 'methods page'],
    ]);
  });

  it('without a source URL keeps relative hrefs as written and makes no document link of them', async () => {
    const doc = await extract(fixture('broken.html'), 'text/html');
    expect(doc.links.map((l) => l.href)).toEqual(['https://birds.example.org/reports/2023?src=notes#summary', 'methods.html']);
    const r = buildRecords(doc);
    expect(r.links.filter((l) => l.linkType === 'document').map((l) => l.to)).toEqual([
      'https://birds.example.org/reports/2023?src=notes#summary',
    ]);
  });

  it('drops script URLs and same-page anchors, honours <base href>', async () => {
    const html = `<html><head><base href="https://docs.example.org/v2/"><title>Links</title></head><body>
      <p>Read the <a href="guide/intro.html">introduction</a>, not <a href="javascript:alert(1)">this</a>
      or <a href=" JaVaScRiPt:alert(2)">that</a> or <a href="#top">the top</a>.</p></body></html>`;
    const doc = await extract(utf8(html), 'text/html', { sourceUrl: 'https://elsewhere.example.com/page' });
    expect(doc.links.map((l) => [l.href, l.text])).toEqual([['https://docs.example.org/v2/guide/intro.html', 'introduction']]);
    expect(doc.text).toContain('Read the introduction, not this or that or the top.');
  });
});

describe('hostile HTML', () => {
  it('survives nesting 20,000 elements deep', async () => {
    const depth = 20_000;
    const html = `<html><body>${'<div>'.repeat(depth)}<p>The deep paragraph of project KestrelDeep9 is 20000 levels down.</p><script>SCRIPT_MARKER</script>${'</div>'.repeat(depth)}</body></html>`;
    const doc = await extract(utf8(html), 'text/html');
    expect(doc.text).toContain('The deep paragraph of project KestrelDeep9 is 20000 levels down.');
    expect(doc.text).not.toContain('SCRIPT_MARKER');
    expectDocumentOffsets(doc);
  });

  it('survives thousands of unclosed inline and block tags', async () => {
    const html = `<div><span><b><i><a href="https://x.example/">${'<p><span><em>word '.repeat(5_000)}<table><tr><td>cell`;
    const doc = await extract(utf8(html), 'text/html');
    expect(doc.text).toContain('word');
    expectDocumentOffsets(doc);
    expectRecordOffsets(doc, buildRecords(doc));
  });

  it('treats markup soup as text or empty, never as a crash', async () => {
    for (const soup of ['<<<>>><!-- unterminated comment', '</p></div></body></html>', '<p <p <p', '<![CDATA[ x', '<script>only script']) {
      try {
        const doc = await extract(utf8(soup), 'text/html');
        expectDocumentOffsets(doc);
        for (const m of ['only script']) expect(doc.text).not.toContain(m);
      } catch (e) {
        expect(e).toBeInstanceOf(ExtractionError);
        expect((e as ExtractionError).reason).toBe('empty');
      }
    }
  });

  it('uses the cleaned body when main-content detection keeps too little', async () => {
    // Readability picks the paragraph and drops the (longer) list in another part of the page.
    const para = `<p>${'The north station of Orlavik recorded 12 birds in 1999, and more, and more. '.repeat(8)}</p>`;
    const items = Array.from({ length: 40 }, (_, i) => `<li>Tern ring number ${i} was read at the east station in 2001</li>`).join('');
    const html = `<html><body><div><div><div>${para}</div></div></div><table><tr><td><div><ul>${items}</ul></div></td></tr></table></body></html>`;
    const doc = await extract(utf8(html), 'text/html');
    expect(doc.text).toContain('The north station of Orlavik recorded 12 birds in 1999');
    expect(doc.text).toContain('Tern ring number 39 was read at the east station in 2001');
  });
});
