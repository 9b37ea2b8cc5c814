/**
 * Builds the canonical plain text of a document block by block, keeping section and hyperlink offsets
 * exact: every Section and DocLink indexes into the final text.
 *
 * Blocks are separated by a blank line ("\n\n"). Sections partition the text: a section starts where
 * its heading (or first block) starts and ends where the next section starts; the separator before a
 * heading belongs to the previous section.
 */
import { overLimit, type DocLink, type OutlineEntry, type Section } from './types.ts';

export type InlineLink = { href: string; start: number; end: number };
export type InlineText = { text: string; links: InlineLink[] };

// Invisible characters that only get in the way of search and offsets.
const INVISIBLE = /[\u00AD\u200B-\u200D\u2060\uFEFF]/g;
// C0/C1 controls other than tab, newline and carriage return.
// eslint-disable-next-line no-control-regex
const CONTROLS = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F]/g;

/** Removes invisible and control characters (keeps \t, \n, \r). */
export function stripInvisible(s: string): string {
  return s.replace(INVISIBLE, '').replace(CONTROLS, ' ');
}

/** Collapses all whitespace runs to one space and trims. */
export function collapseWhitespace(s: string): string {
  return stripInvisible(s).replace(/\s+/g, ' ').trim();
}

/**
 * Accumulates the inline content of one block (paragraph, heading, list item), collapsing whitespace
 * the way HTML rendering does while tracking hyperlink spans.
 */
export class InlineBuffer {
  private parts: string[] = [];
  private len = 0;
  private last = '';
  private links: InlineLink[] = [];
  private open: { href: string | null; start: number }[] = [];

  get length() {
    return this.len;
  }

  private push(s: string) {
    if (!s) return;
    this.parts.push(s);
    this.len += s.length;
    this.last = s[s.length - 1]!;
  }

  /** Appends text; whitespace collapses unless `preserve` (preformatted text). */
  append(raw: string, preserve = false) {
    let t = stripInvisible(raw);
    if (preserve) {
      t = t.replace(/\r\n?/g, '\n');
    } else {
      t = t.replace(/\s+/g, ' ');
      if (t.startsWith(' ') && (this.len === 0 || this.last === ' ' || this.last === '\n')) t = t.slice(1);
    }
    this.push(t);
  }

  /** A line break inside the block (<br>, a hard break in Markdown). */
  hardBreak() {
    if (this.len === 0 || this.last === '\n') return;
    this.push('\n');
  }

  /** Starts a hyperlink; `href` null marks a nested anchor that only balances closeLink. */
  openLink(href: string | null) {
    this.open.push({ href, start: this.len });
  }

  closeLink() {
    const o = this.open.pop();
    if (o?.href && this.len > o.start) this.links.push({ href: o.href, start: o.start, end: this.len });
  }

  /** The trimmed block text with link spans trimmed to their non-blank anchor text; resets the buffer. */
  finish(): InlineText {
    const raw = this.parts.join('');
    const lead = raw.length - raw.trimStart().length;
    const text = raw.trim();
    const links: InlineLink[] = [];
    for (const l of this.links) {
      let start = Math.max(0, l.start - lead);
      let end = Math.min(text.length, l.end - lead);
      while (start < end && /\s/.test(text[start]!)) start++;
      while (end > start && /\s/.test(text[end - 1]!)) end--;
      if (end > start) links.push({ href: l.href, start, end });
    }
    this.parts = [];
    this.len = 0;
    this.last = '';
    this.links = [];
    this.open = [];
    return { text, links };
  }
}

export class DocumentBuilder {
  private parts: string[] = [];
  private len = 0;
  /** Characters the text may reach (ExpansionLimits.maxTextChars): checked as it grows, never after. */
  private readonly maxChars: number;
  constructor(maxChars = Number.POSITIVE_INFINITY) {
    this.maxChars = maxChars;
  }
  private headingStack: { level: number; text: string }[] = [];
  private current: Section | null = null;
  private pending: { path: string[]; page?: number } | null = null;
  readonly sections: Section[] = [];
  readonly links: DocLink[] = [];
  readonly outline: OutlineEntry[] = [];

  get length() {
    return this.len;
  }

  private write(s: string) {
    this.parts.push(s);
    this.len += s.length;
    if (this.len > this.maxChars) throw overLimit(`its text is longer than ${this.maxChars.toLocaleString('en-US')} characters`);
  }

  private begin(sep: string): number {
    if (this.len > 0) this.write(sep);
    return this.len;
  }

  private openSection(path: string[], start: number, page?: number, level?: number) {
    if (this.current) this.current.end = start;
    const s: Section = page === undefined ? { path, start, end: start } : { path, start, end: start, page };
    this.sections.push(s);
    this.current = s;
    if (path.length > 0) {
      const entry: OutlineEntry = { path };
      if (page !== undefined) entry.page = page;
      if (level !== undefined) entry.level = level;
      this.outline.push(entry);
    }
  }

  private addLinks(base: string, offset: number, links: InlineLink[]) {
    for (const l of links) {
      this.links.push({ href: l.href, text: base.slice(l.start, l.end), start: offset + l.start, end: offset + l.end });
    }
  }

  /** A heading of the given level (1 = top): opens a new section whose path is the heading trail. */
  heading(level: number, content: InlineText) {
    // One line: a heading's text is its section path element (same length, so links keep offsets).
    const text = content.text.replace(/\s/g, ' ');
    if (!text) return;
    while (this.headingStack.length > 0 && this.headingStack[this.headingStack.length - 1]!.level >= level) {
      this.headingStack.pop();
    }
    this.headingStack.push({ level, text });
    this.pending = null;
    const start = this.begin('\n\n');
    this.openSection(
      this.headingStack.map((h) => h.text),
      start,
      undefined,
      level,
    );
    this.write(text);
    this.addLinks(text, start, content.links);
  }

  /** The next block opens a section with this path (PDF pages, JSON top-level keys); no heading text. */
  startSection(path: string[], page?: number) {
    this.headingStack = [];
    this.pending = page === undefined ? { path } : { path, page };
  }

  /** A block of text (already normalised); `sep` is written before it unless it is the first block. */
  block(content: InlineText, sep = '\n\n') {
    const text = content.text;
    if (!text) return;
    const start = this.begin(sep);
    if (this.pending) {
      this.openSection(this.pending.path, start, this.pending.page);
      this.pending = null;
    } else if (!this.current) {
      this.openSection([], start);
    }
    this.write(text);
    this.addLinks(text, start, content.links);
  }

  finish(): { text: string; sections: Section[]; links: DocLink[]; outline: OutlineEntry[] } {
    const text = this.parts.join('');
    if (this.current) this.current.end = text.length;
    return { text, sections: this.sections, links: this.links, outline: this.outline };
  }
}

/** Resolves an href against a base; returns null for script URLs and unusable values. */
export function resolveHref(href: string, base: string | undefined): string | null {
  const h = href.trim();
  if (!h || h.startsWith('#')) return null;
  if (/^(javascript|vbscript|data|blob|about|file):/i.test(stripInvisible(h).replace(/\s/g, ''))) return null;
  let url: URL;
  try {
    url = base ? new URL(h, base) : new URL(h);
  } catch {
    // Not absolute and no usable base: keep the relative reference as written.
    return base ? null : /^[a-z][a-z0-9+.-]*:/i.test(h) ? null : h;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'mailto:') return null;
  // A jump inside the same page is not a link to another document.
  if (base && url.hash && url.href.split('#')[0] === base.split('#')[0]) return null;
  return url.href;
}
