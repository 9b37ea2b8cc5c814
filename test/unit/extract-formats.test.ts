import { describe, expect, it } from 'vitest';
import { extract } from '../../core/ingest/extract/index.ts';
import { buildRecords } from '../../core/ingest/prepare/records.ts';
import { expectDocumentOffsets, expectRecordOffsets, fixture, utf8 } from '../fixtures/ingest/checks.ts';

describe('Markdown (nested.md)', () => {
  it('builds the section tree from headings, with front matter title and rendered plain text', async () => {
    const doc = await extract(fixture('nested.md'), 'text/markdown');
    expectDocumentOffsets(doc);
    expect(doc.title).toBe('Harbour Handbook');
    expect(doc.sections.map((s) => s.path)).toEqual([
      ['Harbour Handbook'],
      ['Harbour Handbook', 'Moorings'],
      ['Harbour Handbook', 'Moorings', 'Winter rules'],
      ['Harbour Handbook', 'Fees'],
      ['Harbour Handbook', 'Fees', 'Discounts'],
      ['Appendix'],
    ]);
    for (const s of doc.sections) {
      expect(doc.text.startsWith(`${s.path[s.path.length - 1]}\n`, s.start)).toBe(true);
    }
    // No markup and no front matter in the text.
    expect(doc.text).not.toMatch(/^#{1,6} (?!not a heading)/m);
    expect(doc.text).not.toContain('layout: page');
    expect(doc.text).not.toContain('](');
    expect(doc.text).not.toContain('[tides]');
    // A '#' line inside fenced code stays code, not a section.
    expect(doc.text).toContain('# not a heading: inside a fenced code block\nmoor --berth 12');
    expect(doc.text).toContain('Boat length | Fee per night\nunder 8 m | 20 EUR\n8 m and over | 35 EUR');
    expect(doc.text).toContain('See the winter notice and the tide table.');
    expect(doc.text).toContain('Keep fenders out at all times.\n\nReport damage to the office.');
  });

  it('collects inline, reference and autolinked hyperlinks', async () => {
    const doc = await extract(fixture('nested.md'), 'text/markdown', { sourceUrl: 'https://harbour.example.org/handbook.md' });
    expect(doc.links.map((l) => [l.href, l.text])).toEqual([
      ['https://harbour.example.org/winter', 'winter notice'],
      ['https://harbour.example.org/tides', 'tide table'],
      ['mailto:office@harbour.example.org', 'office@harbour.example.org'],
    ]);
    const winter = doc.sections.find((s) => s.path.at(-1) === 'Winter rules')!;
    expect(doc.links[0]!.start).toBeGreaterThan(winter.start);
    expect(doc.links[0]!.end).toBeLessThan(winter.end);
  });

  it('parses large documents in chunks without losing headings or cross-chunk references', async () => {
    const parts = ['# Register\n'];
    for (let i = 0; i < 400; i++) {
      parts.push(`\n## Boat ${i}\n\nBoat ${i} is moored at berth ${i} and owned by [member ${i}][owner${i % 7}].\n\n- length ${i % 12} m\n- built ${1950 + (i % 70)}\n\n\`\`\`\nlog entry ${i}\n\n# log heading ${i}\n\`\`\`\n`);
    }
    for (let k = 0; k < 7; k++) parts.push(`\n[owner${k}]: https://club.example.org/members/${k}\n`);
    const source = parts.join('');
    expect(source.length).toBeGreaterThan(50_000);
    const doc = await extract(utf8(source), 'text/markdown');
    expectDocumentOffsets(doc);
    expect(doc.sections).toHaveLength(401);
    expect(doc.sections[400]!.path).toEqual(['Register', 'Boat 399']);
    expect(doc.links).toHaveLength(400);
    expect(doc.links[399]).toMatchObject({ href: 'https://club.example.org/members/0', text: 'member 399' });
    expect(doc.text).toContain('log entry 399\n\n# log heading 399');
    expect(doc.text).not.toContain('[owner');
  });

  it('keeps hostile nesting and delimiter runs as plain text (10,000 levels of quotes, lists, brackets)', async () => {
    for (const src of [
      `${'>'.repeat(10_000)} deep quote about Orlavik in 1999.\n`,
      `${'- '.repeat(2_000)}deep item\n`,
      `${'['.repeat(10_000)}x${']'.repeat(10_000)}`,
      `${'*'.repeat(10_000)}a${'*'.repeat(10_000)}`,
    ]) {
      const doc = await extract(utf8(src), 'text/markdown');
      expect(doc.warnings).toEqual(['Part of the Markdown could not be parsed and was kept as plain text.']);
      expectDocumentOffsets(doc);
      expectRecordOffsets(doc, buildRecords(doc));
    }
  });

  it('splits a giant paragraph that micromark would parse in quadratic time', async () => {
    // Unmatched closing delimiters in one 90 KB paragraph.
    const doc = await extract(utf8(`Orlavik notes: ${'a* '.repeat(30_000)}`), 'text/markdown');
    expect(doc.text.startsWith('Orlavik notes: a* a*')).toBe(true);
    expect(doc.text.replace(/\s+/g, '')).toBe(`Orlavik notes: ${'a* '.repeat(30_000)}`.replace(/\s+/g, ''));
    expect(doc.warnings).toEqual([]);
  });
});

describe('JSON', () => {
  it('states every leaf as path: value, quoting odd keys, with sections per top-level key', async () => {
    const value = {
      title: 'Harbour register',
      boats: [
        { name: 'Tern', length: 7.5, moored: true, owner: null },
        { name: 'Gull', tags: [], notes: 'Rebuilt in 1999.\nNew   mast.' },
      ],
      'odd key: with colon': { 'a.b': 1, '': 'empty key' },
    };
    const json = JSON.stringify(value).replace('"odd key', '"__proto__":"own key","odd key');
    const doc = await extract(utf8(json), 'application/json');
    expectDocumentOffsets(doc);
    expect(doc.title).toBe('Harbour register');
    expect(doc.text.split('\n').filter(Boolean)).toEqual([
      'title: Harbour register',
      'boats[0].name: Tern',
      'boats[0].length: 7.5',
      'boats[0].moored: true',
      'boats[0].owner: null',
      'boats[1].name: Gull',
      'boats[1].tags: []',
      'boats[1].notes: Rebuilt in 1999. New mast.',
      '__proto__: own key',
      '["odd key: with colon"]["a.b"]: 1',
      '["odd key: with colon"][""]: empty key',
    ]);
    expect(doc.sections.map((s) => s.path)).toEqual([['title'], ['boats'], ['__proto__'], ['odd key: with colon']]);
    const r = buildRecords(doc);
    expectRecordOffsets(doc, r);
    expect(r.facts.map((f) => [f.text, f.subject])).toEqual(
      expect.arrayContaining([
        ['title: Harbour register', 'title'],
        ['boats[0].length: 7.5', 'length'],
        ['Rebuilt in 1999.', 'notes'],
        ['["odd key: with colon"]["a.b"]: 1', 'a.b'],
      ]),
    );
    expect(r.facts.map((f) => f.text)).not.toContain('boats[0].owner: null');
  });

  it('handles objects nested 10,000 levels deep without exhausting the stack', async () => {
    const depth = 10_000;
    const json = `${'{"level":'.repeat(depth)}{"leaf":"The deepest value of project KestrelDeep10k is 10000."}${'}'.repeat(depth)}`;
    const doc = await extract(utf8(json), 'application/json');
    expectDocumentOffsets(doc);
    expect(doc.text.endsWith(': The deepest value of project KestrelDeep10k is 10000.')).toBe(true);
    expect(doc.text.startsWith('level.level.level')).toBe(true);
    expect(doc.text).toContain('…level.level');
    expect(doc.text.length).toBeLessThan(1_000);
    expect(doc.warnings).toEqual([expect.stringMatching(/nested deeper than 64 levels/)]);
    const r = buildRecords(doc);
    expectRecordOffsets(doc, r);
    expect(r.facts.map((f) => f.text)).toContain('The deepest value of project KestrelDeep10k is 10000.');
  });

  it('handles arrays nested 10,000 levels deep', async () => {
    const depth = 10_000;
    const json = `${'['.repeat(depth)}"bottom"${']'.repeat(depth)}`;
    const doc = await extract(utf8(json), 'application/json');
    expect(doc.text).toMatch(/^(?:\[0\]){16}…(?:\[0\]){16}: bottom$/);
    expect(doc.text.length).toBeLessThan(500);
  });

  it('states a bare scalar as itself', async () => {
    expect((await extract(utf8('"Orlavik was founded in 1310."'), 'application/json')).text).toBe('Orlavik was founded in 1310.');
    expect((await extract(utf8('42'), 'application/json')).text).toBe('42');
  });
});

describe('plain text (paragraphs.txt)', () => {
  it('splits paragraphs at blank lines and form feeds, normalising line ends and trailing spaces', async () => {
    const doc = await extract(fixture('paragraphs.txt'), 'text/plain');
    expectDocumentOffsets(doc);
    expect(doc.title).toBeNull();
    expect(doc.sections).toEqual([{ path: [], start: 0, end: doc.text.length }]);
    expect(doc.text.split('\n\n')).toEqual([
      'Orlavik weather notes',
      'The weather station on Kettle Point was installed in 1999. It records wind speed every ten minutes\nand sends the readings to the harbour office.',
      'Storm warnings:\n- Gale force 8 closes the outer harbour.\n- Gale force 10 closes the ferry route.',
      'The highest gust ever measured was 41 metres per second, on 12 January 2005.',
    ]);
    expect(doc.text).not.toContain('\r');
  });

  it('keeps a 1 MB single-line text intact', async () => {
    const big = 'a'.repeat(1_000_000);
    const doc = await extract(utf8(big), 'text/plain');
    expect(doc.text).toBe(big);
    const r = buildRecords(doc);
    expectRecordOffsets(doc, r);
    expect(r.excerpts.every((e) => e.text.length <= 1200)).toBe(true);
    expect(r.excerpts.reduce((n, e) => n + e.text.length, 0)).toBe(1_000_000);
    expect(r.facts).toEqual([]);
  });
});
