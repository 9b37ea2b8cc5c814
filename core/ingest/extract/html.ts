/**
 * HTML: a DOM from linkedom, main content from Mozilla Readability, rendered to blocks by an iterative
 * walk (headings kept, scripts/styles/hidden nodes and navigation boilerplate dropped, hyperlinks
 * collected with their anchor-text spans).
 *
 * The page body is also walked with a boilerplate filter before Readability runs (Readability mutates
 * the DOM). That walk is used when Readability fails (hostile nesting, too many elements) or keeps far
 * less text than the cleaned body, which happens on short or multi-part pages.
 */
import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import { DocumentBuilder, InlineBuffer, collapseWhitespace, resolveHref, type InlineText } from './builder.ts';
import { htmlHeadings } from './tags.ts';
import type { ExtractContext, OutlineEntry, RawExtraction } from './types.ts';

/** The slice of the DOM API this module uses (linkedom implements it). */
interface DomNode {
  nodeType: number;
  nodeName: string;
  nodeValue: string | null;
  textContent: string | null;
  childNodes: ArrayLike<DomNode>;
  parentNode: DomNode | null;
  getAttribute?(name: string): string | null;
  getElementsByTagName?(name: string): ArrayLike<DomNode>;
  setAttribute?(name: string, value: string): void;
}
interface DomDocument {
  documentElement: DomNode | null;
  body: DomNode | null;
  head: DomNode | null;
  getElementsByTagName(name: string): ArrayLike<DomNode>;
}

type Event = { kind: 'heading'; level: number; content: InlineText } | { kind: 'block'; content: InlineText; sep: string };

const SKIP = new Set([
  'script', 'style', 'noscript', 'template', 'svg', 'math', 'iframe', 'frame', 'frameset', 'object', 'embed',
  'canvas', 'audio', 'video', 'picture', 'source', 'track', 'map', 'head', 'title', 'meta', 'link', 'base',
  'select', 'option', 'optgroup', 'datalist', 'button', 'input', 'textarea', 'dialog', 'img', 'area',
]);
const BLOCK = new Set([
  'address', 'article', 'aside', 'blockquote', 'body', 'caption', 'center', 'dd', 'details', 'dialog', 'dir',
  'div', 'dl', 'dt', 'fieldset', 'figcaption', 'figure', 'footer', 'form', 'header', 'hgroup', 'html', 'legend',
  'li', 'main', 'menu', 'nav', 'ol', 'p', 'section', 'summary', 'table', 'tbody', 'tfoot', 'thead', 'ul',
]);
const BOILERPLATE_ROLES = new Set([
  'navigation', 'banner', 'contentinfo', 'complementary', 'search', 'menu', 'menubar', 'toolbar', 'dialog',
  'alertdialog', 'tooltip',
]);
const BOILERPLATE_NAMES =
  /(?:^|[\s_-])(?:nav|navbar|navigation|menu|breadcrumbs?|footer|sidebar|cookies?|consent|gdpr|advert|advertisement|ads|promo|newsletter|subscribe|share|sharing|social|skip-?link|related|comments?|popup|modal)(?:$|[\s_-])/i;

const attr = (n: DomNode, name: string) => (n.getAttribute ? n.getAttribute(name) : null);

// Readability turns <h1> into <h2> (and copies attributes): the original level is kept in this one.
const LEVEL_ATTR = 'data-cairn-heading-level';
const headingLevel = (n: DomNode, tag: string) => Number(attr(n, LEVEL_ATTR)) || Number(tag[1]);

function markHeadingLevels(doc: DomDocument) {
  for (let level = 1; level <= 6; level++) {
    const hs = Array.from(doc.getElementsByTagName(`h${level}`));
    for (const h of hs) h.setAttribute?.(LEVEL_ATTR, String(level));
  }
}

function isHidden(n: DomNode): boolean {
  if (attr(n, 'hidden') !== null) return true;
  if ((attr(n, 'aria-hidden') ?? '').trim().toLowerCase() === 'true') return true;
  const style = attr(n, 'style');
  return !!style && /(?:display\s*:\s*none|visibility\s*:\s*hidden)/i.test(style);
}

function isBoilerplate(n: DomNode, tag: string, strict: boolean): boolean {
  if (tag === 'nav') return true;
  const role = (attr(n, 'role') ?? '').trim().toLowerCase();
  if (BOILERPLATE_ROLES.has(role)) return true;
  if (!strict) return false;
  if (tag === 'footer' || tag === 'aside' || tag === 'form') return true;
  if (tag === 'header' && (n.getElementsByTagName?.('nav').length ?? 0) > 0) return true;
  if (tag === 'main' || tag === 'article' || tag === 'body' || tag === 'html') return false;
  return BOILERPLATE_NAMES.test(`${attr(n, 'id') ?? ''} ${attr(n, 'class') ?? ''}`);
}

const isHeadingTag = (tag: string) => /^h[1-6]$/.test(tag);

/**
 * The walk's rendering state: the inline text being gathered and the open heading, <pre> and table
 * row. One per walk; the walk calls its methods per node, so nothing is allocated per node here.
 */
class BlockRenderer {
  readonly events: Event[] = [];
  private readonly buf = new InlineBuffer();
  private readonly base: string | undefined;
  private heading = 0;
  private pre = 0;
  private cells = 0;
  private rowSep = '\n\n';

  constructor(base: string | undefined) {
    this.base = base;
  }

  flush(sep = '\n\n') {
    if (this.heading > 0) return;
    if (this.buf.length > 0) {
      const content = this.buf.finish();
      if (content.text) this.events.push({ kind: 'block', content, sep });
    }
  }

  private endHeading() {
    const content = this.buf.finish();
    if (content.text) this.events.push({ kind: 'heading', level: this.heading, content });
    this.heading = 0;
  }

  text(value: string) {
    this.buf.append(value, this.pre > 0);
  }

  /** Starts an element; false when it has nothing to descend into (<br>, <hr>). */
  open(node: DomNode, tag: string): boolean {
    // Block content inside a heading (broken markup such as an unclosed <h2>) ends the heading.
    if (this.heading > 0 && (BLOCK.has(tag) || isHeadingTag(tag) || tag === 'pre' || tag === 'table' || tag === 'tr' || tag === 'hr')) {
      this.endHeading();
    }
    if (isHeadingTag(tag)) {
      this.flush();
      this.heading = headingLevel(node, tag);
    } else if (tag === 'br') {
      this.buf.hardBreak();
      return false;
    } else if (tag === 'hr') {
      this.flush();
      return false;
    } else if (tag === 'a') {
      const href = attr(node, 'href');
      this.buf.openLink(href ? resolveHref(href, this.base) : null);
    } else if (tag === 'pre') {
      this.flush();
      this.pre++;
    } else if (tag === 'table') {
      this.flush();
      this.rowSep = '\n\n';
    } else if (tag === 'tr') {
      this.flush(this.rowSep);
      this.cells = 0;
    } else if (tag === 'td' || tag === 'th') {
      if (this.cells++ > 0) this.buf.append(' | ');
    } else if (BLOCK.has(tag)) {
      this.flush();
    }
    return true;
  }

  close(node: DomNode, tag: string) {
    if (isHeadingTag(tag)) {
      // A heading cut short by a block inside it (unclosed <h2>) was emitted already.
      if (this.heading === headingLevel(node, tag)) this.endHeading();
      else this.flush();
    } else if (tag === 'a') {
      this.buf.closeLink();
    } else if (tag === 'pre') {
      this.flush();
      this.pre--;
    } else if (tag === 'tr') {
      this.flush(this.rowSep);
      this.rowSep = '\n';
    } else if (tag === 'table') {
      this.flush();
      this.rowSep = '\n\n';
    } else if (BLOCK.has(tag)) {
      this.flush();
    }
  }
}

/** Renders a subtree to heading/block events without recursion; also reports the nesting depth. */
function walk(root: DomNode, base: string | undefined, strict: boolean): { events: Event[]; depth: number } {
  const renderer = new BlockRenderer(base);
  let depth = 0;
  let maxDepth = 0;
  type Frame = { node: DomNode; exit: boolean };
  const stack: Frame[] = [{ node: root, exit: false }];
  while (stack.length > 0) {
    const { node, exit } = stack.pop()!;
    const tag = node.nodeName.toLowerCase();
    if (exit) {
      depth--;
      renderer.close(node, tag);
      continue;
    }
    if (node.nodeType === 3) {
      renderer.text(node.nodeValue ?? '');
      continue;
    }
    if (node.nodeType !== 1 && node.nodeType !== 9 && node.nodeType !== 11) continue;
    if (node !== root && node.nodeType === 1) {
      if (SKIP.has(tag) || isHidden(node) || isBoilerplate(node, tag, strict)) continue;
    }
    if (!renderer.open(node, tag)) continue;
    stack.push({ node, exit: true });
    if (++depth > maxDepth) maxDepth = depth;
    const kids = node.childNodes;
    for (let i = kids.length - 1; i >= 0; i--) stack.push({ node: kids[i]!, exit: false });
  }
  renderer.flush();
  return { events: renderer.events, depth: maxDepth };
}

const MAX_READABILITY_DEPTH = 400;

const eventsLength = (events: Event[]) => events.reduce((n, e) => n + e.content.text.length, 0);

function firstText(doc: DomDocument, tag: string): string | null {
  const el = doc.getElementsByTagName(tag)[0];
  const t = el ? collapseWhitespace(el.textContent ?? '') : '';
  return t || null;
}

function metaContent(doc: DomDocument, names: string[]): string | null {
  const metas = doc.getElementsByTagName('meta');
  for (let i = 0; i < metas.length; i++) {
    const m = metas[i]!;
    const key = (attr(m, 'property') ?? attr(m, 'name') ?? '').toLowerCase();
    if (names.includes(key)) {
      const c = collapseWhitespace(attr(m, 'content') ?? '');
      if (c) return c;
    }
  }
  return null;
}

/** The outline of a page too large to preview in full, without a DOM (linear in the markup). */
function htmlOutline(source: string): { title: string | null; outline: OutlineEntry[] } {
  const { title, headings } = htmlHeadings(source);
  const outline: OutlineEntry[] = [];
  const stack: { level: number; text: string }[] = [];
  for (const { level, text } of headings) {
    while (stack.length > 0 && stack[stack.length - 1]!.level >= level) stack.pop();
    stack.push({ level, text });
    outline.push({ path: stack.map((h) => h.text), level });
  }
  return { title, outline };
}

/** Mozilla Readability's article, or null when it finds none or gives up. */
function readable(doc: DomDocument) {
  try {
    return new Readability(doc as never, {
      serializer: (n: unknown) => n,
      maxElemsToParse: 200_000,
      charThreshold: 200,
    }).parse();
  } catch {
    // Readability gave up (too many elements, nesting deeper than its recursion allows): the caller
    // uses the cleaned body walk instead.
    return null;
  }
}

export function extractHtml(source: string, ctx: ExtractContext): RawExtraction {
  const warnings: string[] = [];
  // Far over the preview limit (page text is rarely over a quarter of the markup): outline only.
  if (source.length > ctx.limit * 4) {
    const { title, outline } = htmlOutline(source);
    return { title, text: '', sections: [], links: [], pages: null, warnings, overLimit: true, outline };
  }
  // linkedom needs a document element: wrap fragments ("<p>hi</p>") in a document.
  const hasRoot = /<html[\s>]/i.test(source.slice(0, 65_536));
  let doc = (parseHTML(hasRoot ? source : `<!doctype html><html><head></head><body>${source}</body></html>`) as unknown as {
    document: DomDocument;
  }).document;
  if (!doc.documentElement) {
    const inner = source.replace(/<\/?html[^<>]*>/gi, '');
    doc = (parseHTML(`<!doctype html><html><head></head><body>${inner}</body></html>`) as unknown as { document: DomDocument }).document;
  }
  const baseEl = doc.getElementsByTagName('base')[0];
  const baseHref = baseEl ? attr(baseEl, 'href') : null;
  let base = ctx.sourceUrl;
  if (baseHref) {
    try {
      base = new URL(baseHref, ctx.sourceUrl).href;
    } catch {
      // An unusable <base href> is ignored, as browsers do.
    }
  }
  const docTitle = firstText(doc, 'title') ?? metaContent(doc, ['og:title', 'twitter:title']);
  const firstH1 = firstText(doc, 'h1');
  markHeadingLevels(doc);
  let root: DomNode | null;
  try {
    root = doc.body ?? doc.documentElement;
  } catch {
    // A document linkedom could not give a body: walk the document element.
    root = doc.documentElement;
  }
  const cleaned = root ? walk(root, base, true) : { events: [], depth: 0 };
  const fallback = cleaned.events;

  let chosen = fallback;
  let title = docTitle;
  // Readability's scoring re-reads textContent per node: quadratic on pathological nesting, which
  // real pages never have. Such documents use the cleaned body walk.
  const article = cleaned.depth <= MAX_READABILITY_DEPTH ? readable(doc) : null;
  const content = article?.content as DomNode | null | undefined;
  if (article && content) {
    const { events } = walk(content, base, false);
    const len = eventsLength(events);
    if (len > 0 && len >= 0.35 * eventsLength(fallback)) {
      chosen = events;
      // Readability drops a first-level heading that repeats the title; keep it as the top heading.
      if (firstH1 && !events.some((e) => e.kind === 'heading' && e.content.text.toLowerCase() === firstH1.toLowerCase())) {
        chosen = [{ kind: 'heading', level: 1, content: { text: firstH1, links: [] } }, ...events];
      }
    }
    if (article.title) title = collapseWhitespace(article.title) || title;
  }

  const b = new DocumentBuilder(ctx.limits.maxTextChars);
  for (const e of chosen) {
    if (e.kind === 'heading') b.heading(e.level, e.content);
    else b.block(e.content, e.sep);
  }
  const built = b.finish();
  if (title === null && firstH1) title = firstH1;
  return {
    title,
    text: built.text,
    sections: built.sections,
    links: built.links,
    pages: null,
    warnings,
    outline: built.outline,
    overLimit: built.text.length > ctx.limit,
  };
}
