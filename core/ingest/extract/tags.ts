/**
 * Raw HTML without a DOM, in linear time: the outline of a page too large to parse for a preview, and
 * the visible text of an HTML block inside Markdown. Patterns such as /<!--[\s\S]*?-->/ or
 * /<h(\d)>[\s\S]*?<\/h\1>/ retry from every start on input that never closes them (1.5 MB of "<!--"
 * did not finish in 100 s); here every character is looked at a bounded number of times.
 */
import { collapseWhitespace } from './builder.ts';

export type HtmlToken =
  | { type: 'text'; text: string }
  | { type: 'open'; name: string }
  | { type: 'close'; name: string }
  /** An element whose content is not markup (script, style, title, ...): its content, unparsed. */
  | { type: 'raw'; name: string; content: string };

// A tag ends at the next '>' or before the next '<' (an unclosed "<a <b>" is two tags), so a match
// never scans past where the next one starts.
const TOKEN = /<!--|<(\/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*>?|<[!?/][^<>]*>?/g;
const RAW = new Set(['script', 'style', 'template', 'noscript', 'svg', 'title', 'textarea']);
const RAW_CLOSE = /<\/(script|style|template|noscript|svg|title|textarea)(?![A-Za-z0-9-])[^<>]*>?/gi;

/** The tokens of `html` in order. An element or comment left open runs to the end of the input. */
export function* htmlTokens(html: string): Generator<HtmlToken> {
  let pos = 0;
  TOKEN.lastIndex = 0;
  for (let m = TOKEN.exec(html); m; m = TOKEN.exec(html)) {
    if (m.index > pos) yield { type: 'text', text: html.slice(pos, m.index) };
    pos = TOKEN.lastIndex;
    if (m[0] === '<!--') {
      const close = html.indexOf('-->', pos);
      pos = close === -1 ? html.length : close + 3;
      TOKEN.lastIndex = pos;
      continue;
    }
    const name = m[2]?.toLowerCase();
    if (!name) continue; // <!doctype>, <?xml?>, a stray "</"
    if (m[1]) {
      yield { type: 'close', name };
      continue;
    }
    if (!RAW.has(name)) {
      yield { type: 'open', name };
      continue;
    }
    let end = html.length;
    let after = html.length;
    RAW_CLOSE.lastIndex = pos;
    for (let c = RAW_CLOSE.exec(html); c; c = RAW_CLOSE.exec(html)) {
      if (c[1]!.toLowerCase() === name) {
        end = c.index;
        after = RAW_CLOSE.lastIndex;
        break;
      }
    }
    yield { type: 'raw', name, content: html.slice(pos, end) };
    pos = after;
    TOKEN.lastIndex = pos;
  }
  if (pos < html.length) yield { type: 'text', text: html.slice(pos) };
}

const ENTITIES: Record<string, string> = { '&nbsp;': ' ', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&amp;': '&' };

const decodeEntities = (s: string) => s.replace(/&(?:nbsp|lt|gt|quot|#39|amp);/gi, (e) => ENTITIES[e.toLowerCase()] ?? e);

/** Visible text of an HTML fragment: tags become spaces, scripts and styles go, whitespace collapses. */
export function htmlText(html: string): string {
  const parts: string[] = [];
  for (const t of htmlTokens(html)) {
    if (t.type === 'text') parts.push(t.text);
    else if (t.type === 'raw' && (t.name === 'title' || t.name === 'textarea')) parts.push(' ', t.content, ' ');
    else parts.push(' ');
  }
  return collapseWhitespace(decodeEntities(parts.join('')));
}

/** The title and the heading levels with their text, in document order. */
export function htmlHeadings(html: string): { title: string | null; headings: { level: number; text: string }[] } {
  let title: string | null = null;
  const headings: { level: number; text: string }[] = [];
  let open: { level: number; parts: string[] } | null = null;
  for (const t of htmlTokens(html)) {
    if (t.type === 'raw') {
      if (t.name === 'title' && title === null) title = collapseWhitespace(decodeEntities(t.content)) || null;
      continue;
    }
    const level = t.type === 'text' ? 0 : /^h[1-6]$/.test(t.name) ? Number(t.name[1]) : 0;
    if (t.type === 'open' && level) {
      open = { level, parts: [] };
    } else if (t.type === 'close' && open && level === open.level) {
      const text = collapseWhitespace(decodeEntities(open.parts.join('')));
      if (text) headings.push({ level, text });
      open = null;
    } else if (open) {
      open.parts.push(t.type === 'text' ? t.text : ' ');
    }
  }
  return { title, headings };
}
