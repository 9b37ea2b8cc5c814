/**
 * Plain text: paragraphs are separated by blank lines (or form feeds). Line breaks inside a paragraph
 * are kept (lists, addresses, verse); trailing spaces and invisible characters are removed.
 */
import { DocumentBuilder, stripInvisible } from './builder.ts';
import type { ExtractContext, RawExtraction } from './types.ts';

/** A line without its trailing spaces, tabs and no-break spaces (a loop: /[ \t]+$/ is quadratic on long runs). */
function trimLineEnd(line: string): string {
  let end = line.length;
  while (end > 0 && (line[end - 1] === ' ' || line[end - 1] === '\t' || line[end - 1] === '\u00A0')) end--;
  return end === line.length ? line : line.slice(0, end);
}

export function extractPlain(source: string, ctx: ExtractContext): RawExtraction {
  const b = new DocumentBuilder(ctx.limits.maxTextChars);
  const normalized = source.replace(/\r\n?/g, '\n').replace(/\f/g, '\n\n');
  const para = /\n[ \t\u00A0]*\n\s*/g;
  let from = 0;
  const emit = (chunk: string) => {
    const lines = stripInvisible(chunk)
      .split('\n')
      .map(trimLineEnd);
    const text = lines.join('\n').trim();
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
