/**
 * Sentence spans and named-entity spotting over canonical text, by rules (no model): deterministic and
 * linear in the input.
 */

export type Span = { start: number; end: number };

const ABBREVIATIONS = new Set([
  'mr', 'mrs', 'ms', 'dr', 'prof', 'sr', 'jr', 'st', 'mt', 'vs', 'etc', 'e.g', 'i.e', 'cf', 'al', 'fig', 'figs',
  'no', 'nos', 'approx', 'inc', 'ltd', 'co', 'corp', 'dept', 'est', 'vol', 'p', 'pp', 'ca', 'gen', 'gov', 'jan',
  'feb', 'mar', 'apr', 'jun', 'jul', 'aug', 'sep', 'sept', 'oct', 'nov', 'dec', 'u.s', 'u.k', 'ph.d', 'a.m', 'p.m',
  'sec', 'ch', 'eq', 'ref', 'rev', 'ed', 'eds', 'op', 'ibid', 'resp', 'incl',
]);

const isSpace = (c: string | undefined) => c !== undefined && /\s/.test(c);

/** Trims a span to its non-whitespace content; null when nothing is left. */
export function trimSpan(text: string, start: number, end: number): Span | null {
  while (start < end && isSpace(text[start])) start++;
  while (end > start && isSpace(text[end - 1])) end--;
  return end > start ? { start, end } : null;
}

/** Is the terminator at text[i] (a '.') the end of an abbreviation or an initial rather than a sentence? */
function isAbbreviation(text: string, dot: number, from: number): boolean {
  let s = dot;
  while (s > from && /[\p{L}.]/u.test(text[s - 1]!)) s--;
  const word = text.slice(s, dot);
  if (!word) return false;
  if (/^\p{Lu}$/u.test(word)) return true; // an initial: "J. Smith"
  return ABBREVIATIONS.has(word.toLowerCase());
}

const BULLET = /^[ \t]*(?:[-*+•‣◦▪]|\d{1,3}[.)])[ \t]/;

/**
 * Sentence spans in text[start, end). Line breaks end a sentence when `lineBreaks` is 'always'
 * (structured text: JSON statements, table rows, code) or, for 'bullets', when the next line starts
 * with a list marker or the line ends with a colon.
 */
export function sentenceSpans(text: string, start: number, end: number, lineBreaks: LineBreaks): Span[] {
  const out: Span[] = [];
  eachSentence(text, { start, end }, lineBreaks, (s) => {
    out.push(s);
  });
  return out;
}

export type LineBreaks = 'always' | 'bullets' | 'never';

/**
 * The spans of sentenceSpans() handed to `visit` one by one, in order, until it returns false: a large
 * document's hundreds of thousands of sentences never sit in one array.
 */
export function eachSentence(text: string, { start, end }: Span, lineBreaks: LineBreaks, visit: (s: Span) => boolean | void): void {
  let stopped = false;
  const push = (a: number, b: number) => {
    const s = trimSpan(text, a, b);
    if (s && visit(s) === false) stopped = true;
  };
  let from = start;
  // A run of terminators (and closing quotes) is matched whole and then checked for the whitespace
  // that must follow it: a lookahead inside the pattern would retry every shorter run (quadratic on a
  // long run of dots).
  const re = /[.!?…]+["'”’)\]]*|\n/g;
  re.lastIndex = start;
  for (let m = re.exec(text); m && m.index < end && !stopped; m = re.exec(text)) {
    const at = m.index;
    const stop = Math.min(at + m[0].length, end);
    if (m[0] !== '\n' && at + m[0].length < text.length && !isSpace(text[at + m[0].length])) continue;
    if (m[0] === '\n') {
      let breakHere = lineBreaks === 'always';
      if (lineBreaks === 'bullets') {
        const next = text.slice(stop, Math.min(end, stop + 12));
        const lineBefore = text.slice(Math.max(from, at - 2), at);
        breakHere = BULLET.test(next) || /:\s*$/.test(lineBefore) || next.startsWith('\n');
      }
      if (breakHere) {
        push(from, at);
        from = stop;
      }
      continue;
    }
    if (m[0] === '.' && isAbbreviation(text, at, from)) continue;
    // "e.g. the" / "approx. twenty": a lowercase continuation is not a new sentence.
    let k = stop;
    while (k < end && (text[k] === ' ' || text[k] === '\t')) k++;
    if (m[0].startsWith('.') && k < end && /\p{Ll}/u.test(text[k]!)) continue;
    push(from, stop);
    from = stop;
  }
  if (!stopped) push(from, end);
}

const CONNECTORS = new Set(['of', 'de', 'da', 'del', 'der', 'van', 'von', 'la', 'le', 'du']);
const LEADING_STOPWORDS = new Set([
  'the', 'a', 'an', 'this', 'that', 'these', 'those', 'in', 'on', 'at', 'for', 'from', 'by', 'with', 'as', 'to',
  'it', 'its', 'our', 'we', 'he', 'she', 'they', 'i', 'you', 'his', 'her', 'their', 'my', 'your', 'if', 'when',
  'while', 'after', 'before', 'since', 'but', 'and', 'or', 'so', 'then', 'there', 'here', 'what', 'who', 'which',
  'where', 'why', 'how', 'all', 'some', 'each', 'every', 'no', 'not', 'both', 'one', 'also', 'however', 'although',
  'because', 'during', 'under', 'over', 'about', 'into', 'through', 'between', 'today', 'yesterday', 'tomorrow',
]);
const NON_NAMES = new Set([
  'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday', 'sunday', 'january', 'february', 'march',
  'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december', 'i', 'ok', 'yes', 'no',
]);

export type EntitySpan = { text: string; start: number; end: number };

const WORD = /[\p{L}\p{N}][\p{L}\p{N}'’\-_]*/gu;
/** Trailing characters a token sheds ("Smith's-" -> "Smith's"). */
const TOKEN_TAIL = new Set(["'", '’', '-', '_']);

/** A token that can be part of a name: capitalised, or mixing letters and digits with a capital. */
function nameLike(tok: string): boolean {
  if (/^\p{Lu}/u.test(tok)) return true;
  return /\p{L}/u.test(tok) && /\d/.test(tok) && /\p{Lu}/u.test(tok);
}

/** Distinctive on its own: has digits, an inner capital (KestrelX, iPhone) or is an acronym. */
function distinctive(tok: string): boolean {
  return (/\d/.test(tok) && /\p{L}/u.test(tok)) || /\p{Ll}\p{Lu}/u.test(tok) || /^\p{Lu}{2,6}\d*$/u.test(tok);
}

/**
 * Named entities in one sentence: runs of capitalised words ("Project KestrelX", "Bank of Orlavik"),
 * single distinctive tokens (KestrelAB12, NASA) and capitalised words that do not start the sentence.
 */
export function entitySpans(text: string, start: number, end: number): EntitySpan[] {
  const sentence = text.slice(start, end);
  const tokens: { t: string; s: number; e: number }[] = [];
  WORD.lastIndex = 0;
  for (let m = WORD.exec(sentence); m; m = WORD.exec(sentence)) {
    let n = m[0].length;
    while (n > 0 && TOKEN_TAIL.has(m[0][n - 1]!)) n--;
    let t = m[0].slice(0, n);
    if (/['’]s$/.test(t)) t = t.slice(0, -2);
    tokens.push({ t, s: m.index, e: m.index + t.length });
  }
  const out: EntitySpan[] = [];
  const seen = new Set<string>();
  let i = 0;
  while (i < tokens.length) {
    if (!nameLike(tokens[i]!.t)) {
      i++;
      continue;
    }
    // Extend the run over name-like tokens separated by one space (or a connector word).
    let j = i;
    while (j + 1 < tokens.length) {
      const gap = sentence.slice(tokens[j]!.e, tokens[j + 1]!.s);
      if (gap === ' ' && nameLike(tokens[j + 1]!.t)) {
        j++;
      } else if (
        gap === ' ' &&
        CONNECTORS.has(tokens[j + 1]!.t.toLowerCase()) &&
        j + 2 < tokens.length &&
        sentence.slice(tokens[j + 1]!.e, tokens[j + 2]!.s) === ' ' &&
        nameLike(tokens[j + 2]!.t) &&
        /^\p{Ll}/u.test(tokens[j + 1]!.t)
      ) {
        j += 2;
      } else {
        break;
      }
    }
    let a = i;
    // Sentence-initial function words ("The", "In") are not part of a name.
    while (a <= j && LEADING_STOPWORDS.has(tokens[a]!.t.toLowerCase())) a++;
    const run = tokens.slice(a, j + 1);
    i = j + 1;
    if (run.length === 0) continue;
    const words = run.map((r) => r.t);
    const first = a === 0 && sentence.slice(0, tokens[0]!.s).trim() === '';
    let keep: boolean;
    if (words.length >= 2) {
      // Shouting ("IGNORE ALL PREVIOUS INSTRUCTIONS") is not a name.
      keep = !(words.length >= 3 && words.every((w) => /^\p{Lu}+$/u.test(w)));
    } else {
      const w = words[0]!;
      keep = distinctive(w) || (!first && !NON_NAMES.has(w.toLowerCase()) && w.length > 1);
    }
    if (!keep || words.length > 6) continue;
    const s = run[0]!.s;
    const e = run[run.length - 1]!.e;
    const name = sentence.slice(s, e);
    if (name.length > 80 || seen.has(name)) continue;
    seen.add(name);
    out.push({ text: name, start: start + s, end: start + e });
  }
  return out;
}
