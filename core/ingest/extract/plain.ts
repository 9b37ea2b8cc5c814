/**
 * Plain text: paragraphs are separated by blank lines (or form feeds). Line breaks inside a paragraph
 * are kept (lists, addresses, verse); trailing spaces and invisible characters are removed.
 */
import { DocumentBuilder, stripInvisible } from './builder.ts';
import type { ExtractContext, RawExtraction } from './types.ts';

const isLineEndBlank = (c: string | undefined) => c === ' ' || c === '\t' || c === '\u00A0';

/**
 * The text with each line's trailing spaces, tabs and no-break spaces removed (a loop: /[ \t]+$/ is
 * quadratic on long runs). The text itself when no line has any: a paragraph of a large document is
 * not split into an array of its lines and joined again (a copy of the whole and of every line).
 */
function trimLineEnds(text: string): string {
  const kept: string[] = [];
  let from = 0;
  for (let lineStart = 0; lineStart <= text.length; ) {
    let nl = text.indexOf('\n', lineStart);
    if (nl === -1) nl = text.length;
    if (isLineEndBlank(text[nl - 1]) && nl > lineStart) {
      let end = nl;
      while (end > lineStart && isLineEndBlank(text[end - 1])) end--;
      kept.push(text.slice(from, end));
      from = nl;
    }
    lineStart = nl + 1;
  }
  if (kept.length === 0) return text;
  kept.push(text.slice(from));
  return kept.join('');
}

export function extractPlain(source: string, ctx: ExtractContext): RawExtraction {
  const b = new DocumentBuilder(ctx.limits.maxTextChars);
  const normalized = source.replace(/\r\n?/g, '\n').replace(/\f/g, '\n\n');
  const para = /\n[ \t\u00A0]*\n\s*/g;
  let from = 0;
  const emit = (chunk: string) => {
    const text = trimLineEnds(stripInvisible(chunk)).trim();
    if (text) b.block({ text, links: [] });
  };
  for (let m = para.exec(normalized); m; m = para.exec(normalized)) {
    emit(normalized.slice(from, m.index));
    from = m.index + m[0].length;
  }
  emit(normalized.slice(from));
  const built = b.finish();
  return { title: null, text: built.text, sections: built.sections, links: [], pages: null, warnings: [], outline: [] };
}
