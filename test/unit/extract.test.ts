import { describe, expect, it } from 'vitest';
import {
  ExtractionError,
  PREVIEW_TEXT_LIMIT,
  SUPPORTED_CONTENT_TYPES,
  assertContentMatches,
  extract,
  normalizeContentType,
  structureOnlyWarning,
  type SupportedContentType,
} from '../../core/ingest/extract/index.ts';
import { buildRecords } from '../../core/ingest/prepare/records.ts';
import { factFor, fileSamples, fixtureDoc, minimalPdf } from '../fixtures/ingest/conformance-shapes.ts';
import { expectDocumentOffsets, expectRecordOffsets, fixture, utf8 } from '../fixtures/ingest/checks.ts';

const STRUCTURE_WARNING =
  'Only document structure was previewed: the text is larger than about 384 KB; live processing extracts it in full.';

async function failure(p: Promise<unknown> | (() => unknown)): Promise<ExtractionError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    expect(e).toBeInstanceOf(ExtractionError);
    return e as ExtractionError;
  }
  throw new Error('expected an ExtractionError');
}

describe('normalizeContentType', () => {
  it('drops parameters and case, maps aliases, rejects the rest', () => {
    expect(normalizeContentType('text/html; charset=utf-8')).toBe('text/html');
    expect(normalizeContentType('Text/HTML')).toBe('text/html');
    expect(normalizeContentType('text/x-markdown')).toBe('text/markdown');
    expect(normalizeContentType('text/markdown; charset=utf-8')).toBe('text/markdown');
    expect(normalizeContentType(' application/json ')).toBe('application/json');
    expect(normalizeContentType('application/xhtml+xml')).toBe('text/html');
    expect(normalizeContentType('application/x-pdf')).toBe('application/pdf');
    expect(normalizeContentType('text/plain;charset=us-ascii')).toBe('text/plain');
    for (const t of SUPPORTED_CONTENT_TYPES) expect(normalizeContentType(t)).toBe(t);
    for (const bad of ['image/png', 'text/csv', 'application/octet-stream', '', ';', null, undefined]) {
      expect(normalizeContentType(bad)).toBeNull();
    }
  });
});

describe('content type checks', () => {
  const pdf = fixture('multipage.pdf');

  it('accepts content that matches its declared type', () => {
    expect(() => assertContentMatches(pdf, 'application/pdf')).not.toThrow();
    expect(() => assertContentMatches(utf8('{"a": [1, 2]}'), 'application/json')).not.toThrow();
    expect(() => assertContentMatches(utf8('# Title\n\nÜmlaut text.'), 'text/markdown')).not.toThrow();
    expect(() => assertContentMatches(utf8('\uFEFFplain with BOM'), 'text/plain')).not.toThrow();
    expect(() => assertContentMatches(utf8('<p>hi</p>'), 'text/html')).not.toThrow();
  });

  it('rejects a "PDF" without the %PDF- header', async () => {
    const e = await failure(() => assertContentMatches(utf8('<html><body>not a pdf</body></html>'), 'application/pdf'));
    expect(e.reason).toBe('type_mismatch');
    expect(e.publicMessage).toMatch(/does not match/);
    expect((await failure(extract(utf8('hello'), 'application/pdf'))).reason).toBe('type_mismatch');
  });

  it('rejects JSON that does not parse', async () => {
    for (const bad of ['{"a": ', "{'single': 1}", 'not json at all', '{"a":1}}']) {
      expect((await failure(() => assertContentMatches(utf8(bad), 'application/json'))).reason).toBe('type_mismatch');
      expect((await failure(extract(utf8(bad), 'application/json'))).reason).toBe('type_mismatch');
    }
  });

  it('rejects PDFs and binary content declared as text', async () => {
    const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 13, 0x49, 0x48, 0x44, 0x52]);
    const invalidUtf8 = new Uint8Array([0x48, 0x69, 0x20, 0xc3, 0x28, 0xa0, 0xa1]);
    const nul = utf8('text\u0000with NUL');
    for (const t of ['text/markdown', 'text/plain', 'text/html'] as const) {
      for (const bytes of [pdf, png, invalidUtf8, nul, new Uint8Array(Buffer.from(minimalPdf('hello'), 'latin1'))]) {
        expect((await failure(() => assertContentMatches(bytes, t))).reason).toBe('type_mismatch');
        expect((await failure(extract(bytes, t))).reason).toBe('type_mismatch');
      }
    }
    expect((await failure(() => assertContentMatches(pdf, 'application/json'))).reason).toBe('type_mismatch');
  });

  it('decodes HTML in the charset it declares', async () => {
    const latin1 = new Uint8Array(
      Buffer.from('<html><head><meta charset="windows-1252"><title>Caf\xe9</title></head><body><p>Cr\xe8me br\xfbl\xe9e is a dessert from 1691.</p></body></html>', 'latin1'),
    );
    expect(() => assertContentMatches(latin1, 'text/html')).not.toThrow();
    const doc = await extract(latin1, 'text/html');
    expect(doc.title).toBe('Café');
    expect(doc.text).toContain('Crème brûlée is a dessert from 1691.');
    // The same bytes are not UTF-8 text.
    expect((await failure(() => assertContentMatches(latin1, 'text/plain'))).reason).toBe('type_mismatch');
  });

  it('decodes UTF-16 text with a byte order mark', async () => {
    const le = new Uint8Array(Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from('Orlavik was founded in 1310.\n', 'utf16le')]));
    expect(() => assertContentMatches(le, 'text/plain')).not.toThrow();
    expect((await extract(le, 'text/plain')).text).toBe('Orlavik was founded in 1310.');
    const be = Buffer.from('# Título\n', 'utf16le').swap16();
    const doc = await extract(new Uint8Array(Buffer.concat([Buffer.from([0xfe, 0xff]), be])), 'text/markdown');
    expect(doc.title).toBe('Título');
  });

  it('accepts empty bytes as any type; extraction reports them as empty', async () => {
    for (const t of SUPPORTED_CONTENT_TYPES) {
      expect(() => assertContentMatches(new Uint8Array(0), t)).not.toThrow();
      expect((await failure(extract(new Uint8Array(0), t))).reason).toBe('empty');
    }
  });

  it('reports unsupported content types', async () => {
    const e = await failure(extract(utf8('x'), 'image/png' as SupportedContentType));
    expect(e.reason).toBe('unsupported');
    expect((await failure(() => assertContentMatches(utf8('x'), 'text/csv' as SupportedContentType))).reason).toBe('unsupported');
  });
});

describe('ExtractionError', () => {
  it('carries a reason and a public message', () => {
    const e = new ExtractionError('corrupt', 'Broken file.', { detail: 'xref offset 12 is past the end' });
    expect(e).toBeInstanceOf(Error);
    expect(e.name).toBe('ExtractionError');
    expect(e.reason).toBe('corrupt');
    expect(e.publicMessage).toBe('Broken file.');
    expect(e.message).toContain('xref offset 12');
    const d = new ExtractionError('empty');
    expect(d.publicMessage).toBe('The document contains no extractable text.');
  });
});

describe('empty documents', () => {
  it.each([
    ['text/plain', ''],
    ['text/plain', ' \n\n\t \n'],
    ['text/markdown', '\n\n---\n\n'],
    ['text/html', '<html><head><script>var a = 1;</script><style>p{}</style></head><body>  </body></html>'],
    ['application/json', '{}'],
    ['application/json', '[]'],
    ['application/json', 'null'],
    ['application/json', '   '],
  ] as [SupportedContentType, string][])('%s %j is empty', async (type, body) => {
    expect((await failure(extract(utf8(body), type))).reason).toBe('empty');
  });
});

describe('conformance fixture shapes', () => {
  const tok = 'a1b2c3d4e5';

  it.each(['html', 'md', 'json', 'inject'] as const)('%s: the fact sentence is one fact inside an excerpt', async (kind) => {
    const [header, body] = fixtureDoc(tok, kind);
    const type = normalizeContentType(header)!;
    expect(type).not.toBeNull();
    assertContentMatches(utf8(body), type);
    const doc = await extract(utf8(body), type, { sourceUrl: `http://127.0.0.1:9977/t/${tok}/page` });
    expectDocumentOffsets(doc);
    const f = factFor(tok, kind);
    const records = buildRecords(doc);
    expectRecordOffsets(doc, records);
    const matching = records.facts.filter((x) => x.text.includes(f.answer));
    expect(matching).toHaveLength(1);
    expect(matching[0]!.text).toBe(f.sentence);
    expect(doc.text.slice(matching[0]!.start, matching[0]!.end)).toBe(f.sentence);
    expect(records.excerpts.some((e) => e.start <= matching[0]!.start && e.end >= matching[0]!.end && e.text.includes(f.sentence))).toBe(true);
  });

  it('html: keeps the heading and the title, and links the co-occurring names', async () => {
    const [, body] = fixtureDoc(tok, 'html');
    const doc = await extract(utf8(body), 'text/html');
    expect(doc.title).toBe(`Field notes for project Kestrel${tok}`);
    expect(doc.sections[0]!.path).toEqual([`Project Kestrel${tok}`]);
    expect(doc.text.startsWith(`Project Kestrel${tok}\n\n`)).toBe(true);
    const links = buildRecords(doc).links;
    expect(links).toContainEqual(expect.objectContaining({ linkType: 'entity', from: `Project Kestrel${tok}`, to: 'Orlavik' }));
  });

  it('json: statements are path: value lines, one section per top-level key', async () => {
    const [, body] = fixtureDoc(tok, 'json');
    const doc = await extract(utf8(body), 'application/json');
    const f = factFor(tok, 'json');
    expect(doc.text.split('\n').filter(Boolean)).toEqual([
      `project: Kestrel${tok}`,
      `facts[0]: ${f.sentence}`,
      'note: Fixture document of the conformance kit.',
    ]);
    expect(doc.sections.map((s) => s.path)).toEqual([['project'], ['facts'], ['note']]);
  });

  it('each of the five upload samples extracts and yields its fact', async () => {
    const f = factFor(tok, 'file');
    for (const [type, bytes] of Object.entries(fileSamples(tok))) {
      const t = type as SupportedContentType;
      assertContentMatches(bytes, t);
      const doc = await extract(bytes, t, { structureOnlyAboveChars: 384_000 });
      expect(doc.structureOnly, type).toBe(false);
      expect(doc.contentType).toBe(t);
      const records = buildRecords(doc);
      expectRecordOffsets(doc, records);
      expect(records.facts.map((x) => x.text), type).toContain(f.sentence);
      expect(records.excerpts.some((e) => e.text.includes(f.sentence)), type).toBe(true);
      if (t === 'application/pdf') {
        expect(doc.pages).toBe(1);
        expect(doc.sections).toEqual([{ path: ['Page 1'], start: 0, end: doc.text.length, page: 1 }]);
      } else {
        expect(doc.pages).toBeNull();
      }
    }
  });
});

describe('structure-only previews', () => {
  function bigMarkdown(chars: number) {
    const parts: string[] = ['# Big handbook\n'];
    let n = 0;
    while (parts.reduce((a, p) => a + p.length, 0) < chars) {
      parts.push(`\n## Chapter ${n}\n\n### Part ${n}.1\n\n${'The harbour of Orlavik was rebuilt in 1842 after the storm. '.repeat(30)}\n`);
      n++;
    }
    return { source: parts.join(''), chapters: n };
  }

  it('previews large Markdown as its outline with the spec warning; live extraction is full', async () => {
    const { source, chapters } = bigMarkdown(700_000);
    const bytes = utf8(source);
    const preview = await extract(bytes, 'text/markdown', { structureOnlyAboveChars: 384_000 });
    expect(preview.structureOnly).toBe(true);
    expect(preview.warnings).toContain(STRUCTURE_WARNING);
    expect(preview.title).toBe('Big handbook');
    expect(preview.sections).toHaveLength(1 + chapters * 2);
    expect(preview.sections[1]!.path).toEqual(['Big handbook', 'Chapter 0']);
    expect(preview.sections[2]!.path).toEqual(['Big handbook', 'Chapter 0', 'Part 0.1']);
    expect(preview.text.length).toBeLessThan(384_000);
    expectDocumentOffsets(preview);
    for (const s of preview.sections) expect(preview.text.slice(s.start, s.end).trim()).toBe(s.path[s.path.length - 1]);

    const live = await extract(bytes, 'text/markdown');
    expect(live.structureOnly).toBe(false);
    expect(live.text.length).toBeGreaterThan(384_000);
    expect(live.sections.map((s) => s.path)).toEqual(preview.sections.map((s) => s.path));
    expect(buildRecords(live).excerpts.length).toBeGreaterThan(buildRecords(preview).excerpts.length);
  });

  it('previews at 384,000 characters; an undefined option means live, full extraction', async () => {
    const { source } = bigMarkdown(450_000);
    const preview = await extract(utf8(source), 'text/markdown', { structureOnlyAboveChars: PREVIEW_TEXT_LIMIT });
    expect(PREVIEW_TEXT_LIMIT).toBe(384_000);
    expect(preview.structureOnly).toBe(true);
    expect(preview.warnings).toContain(STRUCTURE_WARNING);
    expect(structureOnlyWarning()).toBe(STRUCTURE_WARNING);
    const live = await extract(utf8(source), 'text/markdown', { structureOnlyAboveChars: undefined });
    expect(live.structureOnly).toBe(false);
    const small = await extract(utf8('# Small\n\nA harbour of 12 berths.\n'), 'text/markdown', { structureOnlyAboveChars: PREVIEW_TEXT_LIMIT });
    expect(small.structureOnly).toBe(false);
    expect(small.warnings).toEqual([]);
  });

  it('previews a PDF over the limit as pages', async () => {
    const doc = await extract(fixture('multipage.pdf'), 'application/pdf', { structureOnlyAboveChars: 100 });
    expect(doc.structureOnly).toBe(true);
    expect(doc.pages).toBe(4);
    expect(doc.title).toBe('Orlavik Field Station Report');
    expect(doc.sections.map((s) => [s.path, s.page])).toEqual([1, 2, 3, 4].map((n) => [[`Page ${n}`], n]));
    expect(doc.warnings.some((w) => w.startsWith('Only document structure was previewed'))).toBe(true);
    expectDocumentOffsets(doc);
  });

  it('previews large JSON as its top-level keys, large HTML as its headings, large text as nothing but a warning', async () => {
    const json = JSON.stringify({ title: 'Census', rows: Array.from({ length: 5000 }, (_, i) => ({ id: i, note: `row ${i} of the census` })), meta: { v: 1 } });
    const j = await extract(utf8(json), 'application/json', { structureOnlyAboveChars: 10_000 });
    expect(j.structureOnly).toBe(true);
    expect(j.title).toBe('Census');
    expect(j.sections.map((s) => s.path)).toEqual([['title'], ['rows'], ['meta']]);

    const html = `<html><head><title>Big page</title></head><body><h1>Top</h1>${'<h2>Part</h2><p>Some words in a paragraph about terns.</p>'.repeat(400)}<script>SCRIPT_MARKER</script></body></html>`;
    // 10,000: parsed, then cut to structure; 1,000: the markup alone is far over, so a regex outline.
    for (const limit of [10_000, 1_000]) {
      const h = await extract(utf8(html), 'text/html', { structureOnlyAboveChars: limit });
      expect(h.structureOnly).toBe(true);
      expect(h.title).toBe('Big page');
      expect(h.sections[0]!.path).toEqual(['Top']);
      expect(h.sections[1]!.path).toEqual(['Top', 'Part']);
      expect(h.text).not.toContain('SCRIPT_MARKER');
      expectDocumentOffsets(h);
    }

    const t = await extract(utf8('A line of text about terns.\n\n'.repeat(1000)), 'text/plain', { structureOnlyAboveChars: 1_000 });
    expect(t.structureOnly).toBe(true);
    expect(t.text).toBe('');
    expect(t.sections).toEqual([]);
    expect(t.warnings).toHaveLength(1);
  });
});

describe('determinism', () => {
  it('extracting the same bytes twice gives the same document', async () => {
    for (const [name, type] of [
      ['broken.html', 'text/html'],
      ['nested.md', 'text/markdown'],
      ['multipage.pdf', 'application/pdf'],
      ['paragraphs.txt', 'text/plain'],
    ] as const) {
      const a = await extract(fixture(name), type, { sourceUrl: 'https://example.org/dir/page' });
      const b = await extract(fixture(name), type, { sourceUrl: 'https://example.org/dir/page' });
      expect(b, name).toEqual(a);
    }
  });
});
