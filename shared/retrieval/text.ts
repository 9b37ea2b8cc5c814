/**
 * Small, deterministic text helpers shared by ranking and answer validation: word tokens, a light
 * suffix-stripping stem (enough to match "codenames" with "codename"), stop words, and parsing of
 * PostgreSQL's tsvector text form (lexemes with positions) for BM25 and proximity scoring.
 */

const STOP = new Set(
  ('a an and are as at be been but by can did do does for from had has have he her his how i if in into is it its ' +
    'me my no not of on or our she so than that the their them then there these they this to was we were what when ' +
    'where which who whom why will with you your about after again all also am any because before being between both ' +
    'could each few further here just more most much must nor only other over own same should some such too under ' +
    'until up very would tell know please give find show').split(' '),
);

export const isStopWord = (w: string) => STOP.has(w);

/** Lower-cased word tokens (letters and digits). */
export function words(text: string): string[] {
  return text.toLowerCase().normalize('NFKC').match(/[\p{L}\p{N}]+/gu) ?? [];
}

/** A light stem: strips common English inflections so word forms compare equal. */
export function stem(w: string): string {
  if (w.length <= 4 || /\d/.test(w)) return w;
  for (const suffix of ['ies', 'ing', 'ed', 'es', 's', 'ly']) {
    if (w.endsWith(suffix) && w.length - suffix.length >= 4) return suffix === 'ies' ? `${w.slice(0, -3)}y` : w.slice(0, -suffix.length);
  }
  return w;
}

/** Content words of a text (no stop words), stemmed, in order, with repeats. */
export function contentStems(text: string): string[] {
  return words(text).filter((w) => !STOP.has(w)).map(stem);
}

export type TsVector = { positions: Map<string, number[]>; length: number };

const keptLengths = new WeakMap<ReadonlySet<string>, Map<number, string[]>>();

/** A `keep` set's lexemes by length, built once per set (one set serves every candidate of a query). */
function keptByLength(keep: ReadonlySet<string>): Map<number, string[]> {
  let m = keptLengths.get(keep);
  if (!m) {
    m = new Map();
    for (const k of keep) m.set(k.length, [...(m.get(k.length) ?? []), k]);
    keptLengths.set(keep, m);
  }
  return m;
}

/**
 * Parses `'lexeme':1,4A 'other':2` (the text form of a tsvector). A scanner rather than a regular
 * expression: retrieval parses every candidate's vector, and this is several times faster. With
 * `keep`, only those lexemes' positions are kept (ranking looks at the query's lexemes only) and the
 * others are only counted into the length, which saves most of the allocation.
 */
export function parseTsVector(text: string | null, keep?: ReadonlySet<string>): TsVector {
  const positions = new Map<string, number[]>();
  let length = 0;
  if (!text) return { positions, length };
  const byLength = keep ? keptByLength(keep) : null;
  const n = text.length;
  let i = text.indexOf("'");
  while (i >= 0 && i < n) {
    // The lexeme runs to the next quote that is not doubled ('' stands for one quote).
    let lexeme: string | null = '';
    let j = i + 1;
    const q0 = text.indexOf("'", j);
    if (byLength && q0 >= 0 && text.charCodeAt(q0 + 1) !== 39) {
      // The common case with `keep`: a lexeme without quotes is compared in place with the kept
      // lexemes of its length, so the others (most of a vector) are never copied into strings.
      lexeme = null;
      for (const k of byLength.get(q0 - j) ?? []) if (text.startsWith(k, j)) lexeme = k;
      j = q0 + 1;
    } else {
      for (;;) {
        const q = text.indexOf("'", j);
        if (q < 0) return { positions, length }; // unterminated: malformed, stop here
        if (text.charCodeAt(q + 1) === 39) {
          lexeme += text.slice(j, q + 1);
          j = q + 2;
          continue;
        }
        lexeme += text.slice(j, q);
        j = q + 1;
        break;
      }
    }
    const kept = lexeme !== null && (!keep || keep.has(lexeme));
    const pos: number[] | null = kept ? [] : null;
    let count = 0;
    if (text.charCodeAt(j) === 58) {
      // `:` then positions separated by commas, each optionally followed by a weight letter A-D.
      let v = 0;
      let digits = false;
      for (j++; j < n; j++) {
        const c = text.charCodeAt(j);
        if (c >= 48 && c <= 57) {
          v = v * 10 + (c - 48);
          digits = true;
        } else if (c === 44 || (c >= 65 && c <= 68)) {
          if (digits) count = pos ? pos.push(v) : count + 1;
          v = 0;
          digits = false;
        } else break;
      }
      if (digits) count = pos ? pos.push(v) : count + 1;
    }
    if (pos) positions.set(lexeme!, pos);
    length += Math.max(1, count);
    i = text.indexOf("'", j);
  }
  return { positions, length };
}
