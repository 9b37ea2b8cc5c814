/**
 * Markdown (CommonMark + GFM) through mdast-util-from-markdown. The canonical text is the rendered
 * plain text: headings and paragraphs without markup, link anchor text (hrefs collected as links),
 * code blocks verbatim, table rows as "a | b". Headings form the section tree.
 *
 * micromark slows down more than linearly with the number of blocks in one parse, so large sources
 * are parsed in chunks cut at top-level block boundaries (a non-indented line after a blank line,
 * outside fenced code and multi-line HTML blocks). Link reference definitions are repeated in front
 * of every chunk so references still resolve.
 */
import { fromMarkdown } from 'mdast-util-from-markdown';
import { gfmFromMarkdown } from 'mdast-util-gfm';
import { gfm } from 'micromark-extension-gfm';
import type { Nodes, Root } from 'mdast';
import { DocumentBuilder, InlineBuffer, collapseWhitespace, resolveHref, stripInvisible } from './builder.ts';
import { extractPlain } from './plain.ts';
import { htmlText } from './tags.ts';
import type { ExtractContext, OutlineEntry, RawExtraction } from './types.ts';

const CHUNK_ABOVE = 16_384;
const CHUNK_TARGET = 4_096;
const MAX_PRELUDE = 16_384;

const parseOptions = { extensions: [gfm()], mdastExtensions: [gfmFromMarkdown()] };

/** Removes YAML front matter; returns the body and a `title:` value if present. */
function stripFrontMatter(src: string): { body: string; title: string | null } {
  if (!/^---[ \t]*\n/.test(src)) return { body: src, title: null };
  const end = /\n(?:---|\.\.\.)[ \t]*(?:\n|$)/.exec(src.slice(0, 65_536));
  if (!end) return { body: src, title: null };
  const fm = src.slice(0, end.index);
  const t = /^title:[ \t]*(.+)$/m.exec(fm);
  const title = t ? collapseWhitespace(t[1]!.replace(/^["']|["']$/g, '')) || null : null;
  // Keep the line count (blank lines) so nothing else shifts meaningfully.
  return { body: src.slice(end.index + end[0].length), title };
}

const HTML_BLOCKS: [RegExp, RegExp][] = [
  [/^ {0,3}<(?:script|pre|style|textarea)(?:\s|>|$)/i, /<\/(?:script|pre|style|textarea)>/i],
  [/^ {0,3}<!--/, /-->/],
  [/^ {0,3}<\?/, /\?>/],
  [/^ {0,3}<![A-Za-z]/, />/],
  [/^ {0,3}<!\[CDATA\[/, /\]\]>/],
];

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})(.*)/;

/** Whether `line` closes a fence opened with `fence` (the same character, at least as many). */
function closesFence(line: string, fence: string): boolean {
  let i = 0;
  while (i < 3 && line[i] === ' ') i++;
  let n = 0;
  while (line[i + n] === fence[0]) n++;
  if (n < fence.length) return false;
  for (let j = i + n; j < line.length; j++) if (line[j] !== ' ' && line[j] !== '\t') return false;
  return true;
}

const isBlank = (c: string | undefined) => c === ' ' || c === '\t';

/** The text of an ATX heading line ("## Title ##" -> [2, "Title"]), or null when it is none. */
function atxHeading(line: string): [number, string] | null {
  const m = /^ {0,3}(#{1,6})(?:[ \t]|$)/.exec(line);
  if (!m) return null;
  let start = m[0].length;
  let end = line.length;
  while (start < end && isBlank(line[start])) start++;
  while (end > start && isBlank(line[end - 1])) end--;
  // An optional closing run of '#', after a space (or alone).
  let hashes = end;
  while (hashes > start && line[hashes - 1] === '#') hashes--;
  if (hashes === start) end = start;
  else if (hashes < end && isBlank(line[hashes - 1])) {
    end = hashes;
    while (end > start && isBlank(line[end - 1])) end--;
  }
  return [m[1]!.length, line.slice(start, end)];
}
const DEFINITION = /^ {0,3}\[[^\]\n]+\]:[ \t]*\S+(?:[ \t]+(?:"[^"\n]*"|'[^'\n]*'|\([^)\n]*\)))?[ \t]*$/;

type Scan = { cuts: number[]; definitions: string[] };

/** Line scan: safe chunk boundaries and single-line link reference definitions. */
function scanBlocks(src: string, target: number): Scan {
  const cuts = [0];
  const definitions: string[] = [];
  let fenceClose: string | null = null;
  let htmlEnd: RegExp | null = null;
  let prevBlank = true;
  let chunkStart = 0;
  let pos = 0;
  while (pos < src.length) {
    let nl = src.indexOf('\n', pos);
    if (nl === -1) nl = src.length;
    const line = src.slice(pos, nl);
    const blank = line.trim() === '';
    if (fenceClose) {
      if (closesFence(line, fenceClose)) fenceClose = null;
    } else if (htmlEnd) {
      if (htmlEnd.test(line)) htmlEnd = null;
    } else if (!blank) {
      const c = line.charCodeAt(0);
      // A non-indented line after a blank line, an ATX heading or a bullet item starts a top-level
      // block (a bullet item may split a tight list in two, which renders the same).
      const startsBlock = (prevBlank && c !== 0x20 && c !== 0x09) || /^(?:#{1,6}(?:[ \t]|$)|[-*+][ \t]+\S)/.test(line);
      if (startsBlock && pos - chunkStart >= target) {
        cuts.push(pos);
        chunkStart = pos;
      }
      const f = FENCE_OPEN.exec(line);
      if (f && !(f[1]![0] === '`' && f[2]!.includes('`'))) {
        fenceClose = f[1]!;
      } else {
        for (const [start, end] of HTML_BLOCKS) {
          const m = start.exec(line);
          if (m) {
            if (!end.test(line.slice(m[0].length))) htmlEnd = end;
            break;
          }
        }
        if (!htmlEnd && prevBlank && DEFINITION.test(line)) definitions.push(line.trim());
      }
    }
    prevBlank = blank;
    pos = nl + 1;
  }
  return { cuts, definitions };
}

/** A cheap outline (ATX and setext headings outside fences) for structure-only previews. */
export function markdownOutline(src: string): { title: string | null; outline: OutlineEntry[] } {
  const { body, title: fmTitle } = stripFrontMatter(src.replace(/\r\n?/g, '\n'));
  const outline: OutlineEntry[] = [];
  const stack: { level: number; text: string }[] = [];
  let title: string | null = fmTitle;
  let fenceClose: string | null = null;
  let prev = '';
  const clean = (s: string) =>
    collapseWhitespace(
      s
        .replace(/!?\[([^[\]]*)\]\([^()]*\)/g, '$1')
        .replace(/[*_`~]+/g, '')
        .replace(/<[^<>]*>/g, ''),
    );
  const add = (level: number, raw: string) => {
    const text = clean(raw);
    if (!text) return;
    while (stack.length > 0 && stack[stack.length - 1]!.level >= level) stack.pop();
    stack.push({ level, text });
    outline.push({ path: stack.map((h) => h.text), level });
    if (outline.length === 1 && level === 1 && title === null) title = text;
  };
  let pos = 0;
  while (pos < body.length) {
    let nl = body.indexOf('\n', pos);
    if (nl === -1) nl = body.length;
    const line = body.slice(pos, nl);
    pos = nl + 1;
    if (fenceClose) {
      if (closesFence(line, fenceClose)) fenceClose = null;
      prev = '';
      continue;
    }
    const f = FENCE_OPEN.exec(line);
    if (f && !(f[1]![0] === '`' && f[2]!.includes('`'))) {
      fenceClose = f[1]!;
      prev = '';
      continue;
    }
    const atx = atxHeading(line);
    if (atx) {
      add(atx[0], atx[1]);
      prev = '';
      continue;
    }
    if (prev.trim() && /^ {0,3}(=+|-+)[ \t]*$/.test(line) && !/^ {0,3}([-*+]|\d+[.)])\s/.test(prev)) {
      add(line.trim().startsWith('=') ? 1 : 2, prev);
      prev = '';
      continue;
    }
    prev = line;
  }
  return { title, outline };
}

const OVERSIZE = 32_768;
const MAX_CONTAINER_DEPTH = 32;

/**
 * Input on which micromark is quadratic or worse, or exhausts the stack: long delimiter runs inside a
 * line and deeply nested containers. Such pieces are kept as plain text.
 */
function pathological(piece: string): boolean {
  const runs = /[*_~[\]]{64,}/g;
  for (let m = runs.exec(piece); m; m = runs.exec(piece)) {
    const lineStart = piece.lastIndexOf('\n', m.index) + 1;
    let lineEnd = piece.indexOf('\n', m.index);
    if (lineEnd === -1) lineEnd = piece.length;
    // A line of only '*', '_' or '~' is a thematic break, which is harmless.
    if (!/^\s*([*_~])\1*\s*$/.test(piece.slice(lineStart, lineEnd))) return true;
  }
  let pos = 0;
  while (pos < piece.length) {
    let i = pos;
    let depth = 0;
    for (;;) {
      while (piece[i] === ' ' || piece[i] === '\t') i++;
      const c = piece[i];
      if (c === '>') {
        i++;
      } else if ((c === '-' || c === '*' || c === '+') && (piece[i + 1] === ' ' || piece[i + 1] === '\t')) {
        i += 2;
      } else {
        const m = /^\d{1,9}[.)][ \t]/.exec(piece.slice(i, i + 12));
        if (!m) break;
        i += m[0].length;
      }
      if (++depth > MAX_CONTAINER_DEPTH) return true;
    }
    const nl = piece.indexOf('\n', pos);
    if (nl === -1) break;
    pos = nl + 1;
  }
  return false;
}

const isTable = (chunk: string) => {
  const lines = chunk.split('\n', 2);
  return lines.length === 2 && lines[0]!.includes('|') && /^[\s|:-]+$/.test(lines[1]!) && lines[1]!.includes('-');
};

/**
 * Cuts a block too large for one micromark parse (a giant paragraph) at line starts, preferring
 * non-indented lines, or inside a giant line at whitespace. Tables and fenced code parse in linear
 * time and are left whole.
 */
function splitOversize(chunk: string, target: number): string[] {
  const firstLine = chunk.split('\n', 1)[0]!;
  if (chunk.length <= OVERSIZE || FENCE_OPEN.test(firstLine) || isTable(chunk)) return [chunk];
  const out: string[] = [];
  let from = 0;
  while (chunk.length - from > target * 2) {
    const limit = from + target * 2;
    let cut = -1;
    for (let nl = chunk.indexOf('\n', from + target); nl !== -1 && nl < limit; nl = chunk.indexOf('\n', nl + 1)) {
      const c = chunk[nl + 1];
      if (c !== ' ' && c !== '\t') {
        cut = nl + 1;
        break;
      }
      if (cut === -1) cut = nl + 1;
    }
    if (cut === -1) {
      const ws = chunk.lastIndexOf(' ', limit);
      cut = ws > from + target / 2 ? ws + 1 : limit;
    }
    out.push(chunk.slice(from, cut));
    from = cut;
  }
  out.push(chunk.slice(from));
  return out;
}

type Frame = { node: Nodes; exit: boolean; index?: number; parent?: string };

function collectDefinitions(root: Root, defs: Map<string, string>) {
  const stack: Nodes[] = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === 'definition') {
      if (!defs.has(n.identifier)) defs.set(n.identifier, n.url);
      continue;
    }
    if ('children' in n) for (let i = n.children.length - 1; i >= 0; i--) stack.push(n.children[i] as Nodes);
  }
}

/**
 * The render's state: the inline text being gathered and the table row separator. One per render;
 * the render calls its methods per node, so nothing is allocated per node here.
 */
class TreeRenderer {
  private readonly buf = new InlineBuffer();
  private rowSep = '\n\n';
  private readonly b: DocumentBuilder;
  private readonly defs: Map<string, string>;
  private readonly base: string | undefined;

  constructor(b: DocumentBuilder, defs: Map<string, string>, base: string | undefined) {
    this.b = b;
    this.defs = defs;
    this.base = base;
  }

  flush(sep = '\n\n') {
    if (this.buf.length > 0) this.b.block(this.buf.finish(), sep);
    else this.buf.finish();
  }

  /** Starts a node; false when its children are not rendered (leaves, code, HTML, images). */
  open(n: Nodes, index: number | undefined, parent: string | undefined): boolean {
    switch (n.type) {
      case 'heading':
      case 'paragraph':
      case 'blockquote':
      case 'listItem':
      case 'list':
      case 'footnoteDefinition':
        this.flush();
        return true;
      case 'table':
        this.flush();
        this.rowSep = '\n\n';
        return true;
      case 'tableRow':
        this.flush(this.rowSep);
        return true;
      case 'tableCell':
        if ((index ?? 0) > 0) this.buf.append(' | ');
        return true;
      case 'code':
        this.code(n.value);
        return false;
      case 'html':
        this.html(n.value, parent);
        return false;
      case 'text':
      case 'inlineCode':
        this.buf.append(n.value);
        return false;
      case 'break':
        this.buf.hardBreak();
        return false;
      case 'link':
        this.buf.openLink(resolveHref(n.url, this.base));
        return true;
      case 'linkReference': {
        const url = this.defs.get(n.identifier);
        this.buf.openLink(url === undefined ? null : resolveHref(url, this.base));
        return true;
      }
      case 'image':
      case 'imageReference':
      case 'footnoteReference':
      case 'definition':
      case 'thematicBreak':
      case 'yaml':
        return false;
      default:
        return true;
    }
  }

  close(n: Nodes) {
    switch (n.type) {
      case 'heading':
        this.b.heading(n.depth, this.buf.finish());
        break;
      case 'paragraph':
      case 'blockquote':
      case 'listItem':
      case 'list':
      case 'footnoteDefinition':
        this.flush();
        break;
      case 'tableRow':
        this.flush(this.rowSep);
        this.rowSep = '\n';
        break;
      case 'link':
      case 'linkReference':
        this.buf.closeLink();
        break;
      default:
        break;
    }
  }

  private code(value: string) {
    this.flush();
    const text = stripInvisible(value).trimEnd().replace(/^\s*\n/, '');
    if (text.trim()) this.b.block({ text, links: [] });
  }

  private html(value: string, parent: string | undefined) {
    if (/^<br\s*\/?>$/i.test(value.trim())) {
      this.buf.hardBreak();
    } else if (parent !== 'paragraph' && parent !== 'heading' && parent !== 'tableCell' && parent !== 'link') {
      // A block of raw HTML: keep its visible text.
      this.flush();
      const text = htmlText(value);
      if (text) this.b.block({ text, links: [] });
    }
  }
}

/** Renders one parsed tree into the builder (iteratively: hostile nesting cannot exhaust the stack). */
function render(root: Root, b: DocumentBuilder, defs: Map<string, string>, base: string | undefined) {
  const renderer = new TreeRenderer(b, defs, base);
  const stack: Frame[] = [{ node: root, exit: false }];
  while (stack.length > 0) {
    const { node: n, exit, index, parent } = stack.pop()!;
    if (exit) {
      renderer.close(n);
      continue;
    }
    if (!renderer.open(n, index, parent)) continue;
    stack.push({ node: n, exit: true });
    if ('children' in n) {
      const kids = n.children as Nodes[];
      for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i]!, exit: false, index: i, parent: n.type });
    }
  }
  renderer.flush();
}

export async function extractMarkdown(source: string, ctx: ExtractContext): Promise<RawExtraction> {
  const normalized = source.replace(/\r\n?/g, '\n');
  const warnings: string[] = [];
  // Far over the preview limit: outline only, without a full parse.
  if (normalized.length > ctx.limit * 1.5) {
    const { title, outline } = markdownOutline(normalized);
    return { title, text: '', sections: [], links: [], pages: null, warnings, overLimit: true, outline };
  }
  const { body, title: fmTitle } = stripFrontMatter(normalized);
  const b = new DocumentBuilder(ctx.limits.maxTextChars);
  const defs = new Map<string, string>();
  const chunked = body.length > CHUNK_ABOVE;
  const scan = chunked ? scanBlocks(body, CHUNK_TARGET) : { cuts: [0], definitions: [] };
  let prelude = scan.definitions.length > 0 ? `${scan.definitions.join('\n')}\n\n` : '';
  if (prelude.length > MAX_PRELUDE) {
    prelude = '';
    warnings.push('The Markdown has very many link reference definitions; some references may be kept as plain text.');
  }
  let fellBack = false;
  const pieces = scan.cuts.flatMap((cut, i) => splitOversize(body.slice(cut, scan.cuts[i + 1] ?? body.length), CHUNK_TARGET));
  for (const [index, piece] of pieces.entries()) {
    // Parsing megabytes takes seconds: let the event loop breathe every ~100 KB so the activity's
    // heartbeats (and anything else on this process) keep going.
    if (index > 0 && index % 25 === 0) await new Promise((resolve) => setImmediate(resolve));
    let tree: Root | null = null;
    if (!pathological(piece)) {
      try {
        tree = fromMarkdown(prelude + piece, parseOptions);
      } catch {
        // micromark gave up (stack exhausted on input the checks above did not catch).
        tree = null;
      }
    }
    if (!tree) {
      // Hostile input: keep the piece as plain-text paragraphs.
      fellBack = true;
      for (const para of extractPlain(piece, ctx).text.split('\n\n')) b.block({ text: para, links: [] });
      continue;
    }
    collectDefinitions(tree, defs);
    render(tree, b, defs, ctx.sourceUrl);
    if (b.length > ctx.limit * 1.5) break;
  }
  if (fellBack) warnings.push('Part of the Markdown could not be parsed and was kept as plain text.');
  const built = b.finish();
  // The title: front matter, else the first heading when it is a level-1 heading.
  const first = built.outline[0];
  const title = fmTitle ?? (first?.level === 1 ? first.path[0]! : null);
  const overLimit = built.text.length > ctx.limit;
  return {
    title,
    text: built.text,
    sections: built.sections,
    links: built.links,
    pages: null,
    warnings,
    outline: overLimit ? markdownOutline(normalized).outline : built.outline,
    overLimit,
  };
}
