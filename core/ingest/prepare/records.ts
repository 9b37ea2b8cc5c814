/**
 * Records from an extracted document: source excerpts (section-aware chunks), facts (atomic
 * statements taken verbatim from the text) and links (named entities that co-occur in a sentence,
 * and hyperlinks to other documents). Every record's text is exactly doc.text.slice(start, end), and
 * the same document always gives the same records in the same order.
 */
import type { ExtractedDocument, Section } from '../extract/index.ts';
import { eachSentence, entitySpans, trimSpan, type EntitySpan, type Span } from '../../text/sentences.ts';

export type Excerpt = { kind: 'excerpt'; text: string; start: number; end: number; sectionPath: string[]; page?: number };
export type Fact = {
  kind: 'fact';
  text: string;
  start: number;
  end: number;
  subject: string | null;
  sectionPath: string[];
};
export type Link = {
  kind: 'link';
  linkType: 'entity' | 'document';
  from: string;
  to: string;
  text: string;
  start: number;
  end: number;
};
export type RecordSet = { excerpts: Excerpt[]; facts: Fact[]; links: Link[] };

export type BuildRecordsOptions = {
  /** Upper bound of an excerpt's length; default 1200. */
  maxExcerptChars?: number;
  /** `from` of document links: the source's address. Defaults to the document title, else ''. */
  sourceUrl?: string;
  /** Most facts and links one source yields (bounds memory on huge documents); defaults 20,000 each. */
  maxFacts?: number;
  maxLinks?: number;
};

export const DEFAULT_MAX_FACTS = 20_000;
export const DEFAULT_MAX_LINKS = 20_000;

const DEFAULT_MAX_EXCERPT = 1200;
const MAX_ENTITIES_PER_SENTENCE = 8;
const MAX_SENTENCE_FOR_ENTITIES = 1000;

/** Sections sorted, clipped and gap-free, so that every character belongs to exactly one. */
function partition(doc: ExtractedDocument): Section[] {
  const len = doc.text.length;
  const sorted = [...doc.sections]
    .filter((s) => Number.isFinite(s.start) && Number.isFinite(s.end))
    .sort((a, b) => a.start - b.start || a.end - b.end);
  const out: Section[] = [];
  let pos = 0;
  for (const s of sorted) {
    const start = Math.max(pos, Math.min(len, Math.trunc(s.start)));
    const end = Math.max(start, Math.min(len, Math.trunc(s.end)));
    if (start > pos) out.push({ path: [], start: pos, end: start });
    if (end > start) out.push({ ...s, start, end });
    pos = Math.max(pos, end);
  }
  if (pos < len) out.push({ path: [], start: pos, end: len });
  return out;
}

/** Where a section's body starts: after its heading line, when the section starts with one. */
function bodyStart(text: string, s: Section): number {
  const heading = s.path[s.path.length - 1];
  if (!heading || !text.startsWith(heading, s.start)) return s.start;
  const after = s.start + heading.length;
  return after >= s.end || text[after] === '\n' ? after : s.start;
}

// --- excerpts ----------------------------------------------------------------------------------

// The splitters hand their pieces to a visitor as they find them: a large document's lines and
// sentences never sit in arrays of their own before they are merged into excerpts.
type Visit = (s: Span) => void;

function splitBy(text: string, span: Span, re: RegExp, visit: Visit) {
  let from = span.start;
  re.lastIndex = span.start;
  for (let m = re.exec(text); m && m.index < span.end; m = re.exec(text)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    const s = trimSpan(text, from, m.index);
    from = m.index + m[0].length;
    if (s) visit(s);
  }
  const s = trimSpan(text, from, span.end);
  if (s) visit(s);
}

/** Cuts a long run of text at whitespace (or hard, never inside a surrogate pair). */
function cutWords(text: string, span: Span, max: number, visit: Visit) {
  let from = span.start;
  while (span.end - from > max) {
    let cut = from + max;
    let ws = cut;
    while (ws > from + max / 2 && !/\s/.test(text[ws]!)) ws--;
    if (ws > from + max / 2) {
      cut = ws;
    } else {
      const c = text.charCodeAt(cut - 1);
      if (c >= 0xd800 && c <= 0xdbff) cut--;
    }
    const s = trimSpan(text, from, cut);
    if (s) visit(s);
    from = cut;
    while (from < span.end && /\s/.test(text[from]!)) from++;
  }
  const s = trimSpan(text, from, span.end);
  if (s) visit(s);
}

/** Units no longer than max, split at paragraph, then line, then sentence, then word boundaries. */
function units(text: string, span: Span, { max, level }: { max: number; level: number }, visit: Visit) {
  if (span.end - span.start <= max) {
    visit(span);
    return;
  }
  if (level >= 3) {
    cutWords(text, span, max, visit);
    return;
  }
  let pieces = 0;
  const next = (p: Span) => {
    pieces++;
    units(text, p, { max, level: level + 1 }, visit);
  };
  if (level === 0) splitBy(text, span, /\n[ \t]*\n\s*/g, next);
  else if (level === 1) splitBy(text, span, /\n/g, next);
  else eachSentence(text, span, 'never', next);
  if (pieces === 0) units(text, span, { max, level: level + 1 }, visit);
}

/** Appends the excerpts of section `s` to `out`: its units, merged while they fit in `max`. */
function excerptsOf(text: string, s: Section, max: number, out: Excerpt[]) {
  const span = trimSpan(text, s.start, s.end);
  if (!span) return;
  let cur: Span | null = null;
  const emit = (c: Span) => {
    const e: Excerpt = { kind: 'excerpt', text: text.slice(c.start, c.end), start: c.start, end: c.end, sectionPath: s.path };
    if (s.page !== undefined) e.page = s.page;
    out.push(e);
  };
  units(text, span, { max, level: 0 }, (u) => {
    if (cur && u.end - cur.start <= max) {
      cur.end = u.end;
    } else {
      if (cur) emit(cur);
      cur = { start: u.start, end: u.end };
    }
  });
  if (cur) emit(cur);
}

// --- facts -------------------------------------------------------------------------------------

const BOILERPLATE =
  /\b(?:cookies?|privacy policy|terms of (?:use|service)|all rights reserved|copyright|subscribe|sign (?:in|up)|log ?in|click here|read more|skip to|newsletter|enable javascript|share (?:this|on))\b|©/i;
const IMPERATIVE =
  /^(?:please|click|tap|ignore|disregard|forget|read|see|visit|follow|subscribe|sign|log|download|install|run|try|check|share|contact|call|email|respond|reveal|grant|enter|select|choose|go|let's|let us|don't|do not|never|always|make sure|note that|keep|use|make|report|avoid|add|remove|set|open|close|type|press|send|ask|find|get|take|give|put|write|view|learn|discover|explore|start|stop|book|buy|order|join|register|apply|submit)\b/i;
const STATEMENT_VERB =
  /\b(?:is|are|was|were|has|have|had|means|meant|refers? to|stands? for|denotes|defined as|equals?|consists? of|contains?|includes?|comprises?|founded|established|born|died|launched|released|published|located|based|called|named|known as|became|becomes|remains|serves? as|costs?|measures?|weighs?|holds?|owns?|produces?|keeps?|studies|lives?|works?|runs?|uses?|supports?|requires?|belongs? to)\b/i;

/** Is this sentence an atomic statement of fact (who/what/when/numbers/definitions)? */
function isFactSentence(s: string, entities: EntitySpan[]): boolean {
  if (s.length < 12 || s.length > 600) return false;
  const words = s.split(/\s+/).length;
  if (words < 3 || words > 100) return false;
  if (/\?["'”’)]*$/.test(s)) return false;
  if (BOILERPLATE.test(s) || IMPERATIVE.test(s)) return false;
  const letters = s.replace(/[^\p{L}]/gu, '');
  if (s.replace(/[^\p{L}\p{N}]/gu, '').length < s.length * 0.5) return false;
  if (letters.length > 10 && letters.replace(/[^\p{Lu}]/gu, '').length > letters.length * 0.7) return false; // shouting
  if ((s.match(/[{}<>;=\\|`]/g)?.length ?? 0) > s.length * 0.03) return false; // code, tables
  if (!/[\p{L}\p{N}"'”’)\]]$|[.!…]["'”’)\]]*$/u.test(s)) return false; // trailing comma, dash: a fragment
  // Without a full stop only a clear statement counts (headings and labels do not).
  if (!/[.!…]["'”’)\]]*$/.test(s)) return words >= 4 && STATEMENT_VERB.test(s);
  return STATEMENT_VERB.test(s) || /\d/.test(s) || entities.length > 0;
}

const LIST_MARKER = /^(?:[-*+•‣◦▪]|\d{1,3}[.)])[ \t]+/;

const COPULA = /\s(?:is|are|was|were|means|refers to|stands for|has|have|had|became|remains)\s/i;

function subjectOf(sentence: string, offset: number, entities: EntitySpan[]): string | null {
  const m = COPULA.exec(sentence);
  if (m) {
    const before = offset + m.index;
    const inSubject = entities.find((e) => e.end <= before);
    if (inSubject) return inSubject.text;
    const phrase = sentence
      .slice(0, m.index)
      .replace(/^(?:the|a|an)\s+/i, '')
      .trim();
    if (phrase && phrase.split(/\s+/).length <= 8) return phrase;
  }
  return entities[0]?.text ?? null;
}

/** Parses the `path: ` prefix of a JSON statement line; returns the value's offset and the last key. */
function jsonStatement(text: string, start: number, end: number): { valueStart: number; key: string } | null {
  let i = start;
  let key = '';
  let first = true;
  while (i < end) {
    const c = text[i]!;
    if (c === ':' && text[i + 1] === ' ' && !first) return { valueStart: i + 2, key };
    if (c === '[') {
      if (text[i + 1] === '"') {
        let j = i + 2;
        while (j < end && text[j] !== '"') j += text[j] === '\\' ? 2 : 1;
        if (text[j + 1] !== ']') return null;
        try {
          key = JSON.parse(text.slice(i + 1, j + 1)) as string;
        } catch {
          // Not one of our quoted keys: not a statement line.
          return null;
        }
        i = j + 2;
      } else {
        const m = /^\[\d+\]/.exec(text.slice(i, Math.min(end, i + 24)));
        if (!m) return null;
        i += m[0].length;
      }
    } else if (c === '.' || c === '…' || first) {
      const from = c === '.' || c === '…' ? i + 1 : i;
      const m = /^[A-Za-z_$][\w$-]*/.exec(text.slice(from, Math.min(end, from + 512)));
      if (!m) {
        if (c === '…' && text[from] === '[') {
          i = from;
          first = false;
          continue;
        }
        return null;
      }
      key = m[0];
      i = from + m[0].length;
    } else {
      return null;
    }
    first = false;
  }
  return null;
}

// --- build -------------------------------------------------------------------------------------

export function buildRecords(doc: ExtractedDocument, opts?: BuildRecordsOptions): RecordSet {
  const text = doc.text;
  const max = Math.max(50, Math.floor(opts?.maxExcerptChars ?? DEFAULT_MAX_EXCERPT));
  const from = opts?.sourceUrl ?? doc.title ?? '';
  const excerpts: Excerpt[] = [];
  const facts: Fact[] = [];
  const links: Link[] = [];
  const seenFacts = new Set<string>();
  const isJson = doc.contentType === 'application/json';
  const lineBreaks = doc.contentType === 'text/plain' ? 'bullets' : 'always';

  const maxFacts = opts?.maxFacts ?? DEFAULT_MAX_FACTS;
  const maxLinks = opts?.maxLinks ?? DEFAULT_MAX_LINKS;
  const full = () => facts.length >= maxFacts && links.length >= maxLinks;
  const addFact = (span: Span, subject: string | null, path: string[]) => {
    if (facts.length >= maxFacts) return;
    const t = text.slice(span.start, span.end);
    const key = t.replace(/\s+/g, ' ');
    if (seenFacts.has(key)) return;
    seenFacts.add(key);
    facts.push({ kind: 'fact', text: t, start: span.start, end: span.end, subject, sectionPath: path });
  };
  const addEntityLinks = (span: Span, entities: EntitySpan[]) => {
    const es = entities.slice(0, MAX_ENTITIES_PER_SENTENCE);
    const t = text.slice(span.start, span.end);
    for (let i = 0; i < es.length; i++) {
      for (let j = i + 1; j < es.length; j++) {
        if (links.length >= maxLinks) return;
        if (es[i]!.text === es[j]!.text) continue;
        links.push({ kind: 'link', linkType: 'entity', from: es[i]!.text, to: es[j]!.text, text: t, start: span.start, end: span.end });
      }
    }
  };
  const prose = (span: Span, path: string[], fallbackSubject: string | null) => {
    if (full()) return; // nothing more would be kept: skip the sentence work
    eachSentence(text, span, lineBreaks, (whole) => {
      if (full()) return false;
      // A list marker is not part of the statement.
      const marker = LIST_MARKER.exec(text.slice(whole.start, Math.min(whole.end, whole.start + 8)));
      const s = marker ? { start: whole.start + marker[0].length, end: whole.end } : whole;
      if (s.end <= s.start) return true;
      const entities = s.end - s.start <= MAX_SENTENCE_FOR_ENTITIES ? entitySpans(text, s.start, s.end) : [];
      // Once the facts are full only links are still looked for: the fact tests would change nothing.
      if (facts.length < maxFacts) {
        const sentence = text.slice(s.start, s.end);
        if (isFactSentence(sentence, entities)) addFact(s, subjectOf(sentence, s.start, entities) ?? fallbackSubject, path);
      }
      addEntityLinks(s, entities);
      return true;
    });
  };

  for (const s of partition(doc)) {
    excerptsOf(text, s, max, excerpts);
    if (doc.structureOnly) continue;
    const body = { start: bodyStart(text, s), end: s.end };
    if (body.end <= body.start) continue;
    if (!isJson) {
      prose(body, s.path, null);
      continue;
    }
    // JSON: one statement per line. Prose values yield their sentences; short values are facts
    // as whole `path: value` statements.
    for (const line of splitLines(text, body)) {
      const st = jsonStatement(text, line.start, line.end);
      if (!st) {
        prose(line, s.path, null);
        continue;
      }
      const value = text.slice(st.valueStart, line.end);
      if (value === 'null' || value === '""' || value === '{}' || value === '[]') continue;
      if (value.split(/\s+/).length >= 4 || /[.!?]$/.test(value)) {
        prose({ start: st.valueStart, end: line.end }, s.path, st.key);
      } else {
        addFact(line, st.key || null, s.path);
      }
    }
  }

  addDocumentLinks(doc, from, links, maxLinks);
  links.sort(compareLinks);
  return { excerpts, facts, links };
}

/** The document's web hyperlinks with a valid anchor span, as links from the source, up to maxLinks in all. */
function addDocumentLinks(doc: ExtractedDocument, from: string, links: Link[], maxLinks: number) {
  const text = doc.text;
  for (const l of doc.links) {
    if (!/^https?:\/\//i.test(l.href)) continue;
    if (!(l.start >= 0 && l.end > l.start && l.end <= text.length)) continue;
    if (links.length >= maxLinks) break;
    links.push({ kind: 'link', linkType: 'document', from, to: l.href, text: text.slice(l.start, l.end), start: l.start, end: l.end });
  }
}

/** Position order, then type, from and to: the same document always gives the same sequence. */
function compareLinks(a: Link, b: Link): number {
  return (
    a.start - b.start ||
    a.end - b.end ||
    (a.linkType < b.linkType ? -1 : a.linkType > b.linkType ? 1 : 0) ||
    (a.from < b.from ? -1 : a.from > b.from ? 1 : 0) ||
    (a.to < b.to ? -1 : a.to > b.to ? 1 : 0)
  );
}

function splitLines(text: string, span: Span): Span[] {
  const out: Span[] = [];
  let from = span.start;
  while (from < span.end) {
    let nl = text.indexOf('\n', from);
    if (nl === -1 || nl > span.end) nl = span.end;
    const s = trimSpan(text, from, nl);
    if (s) out.push(s);
    from = nl + 1;
  }
  return out;
}
