/**
 * Small, deterministic text helpers shared by ranking and answer validation: word tokens, a light
 * suffix-stripping stem (enough to match "codenames" with "codename"), stop words, and parsing of
 * PostgreSQL's tsvector text form (lexemes with positions) for ranking.
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

/**
 * Parses `'lexeme':1,4A 'other':2` (the text form of a tsvector). A scanner rather than a regular
 * expression: retrieval parses every candidate's vector, and this is several times faster. The length
 * counts positions, at least one per lexeme (platform/db/functions/cairn_tsv_length.sql).
 */
export function parseTsVector(text: string | null): TsVector {
  const positions = new Map<string, number[]>();
  let length = 0;
  if (!text) return { positions, length };
  const n = text.length;
  let i = text.indexOf("'");
  while (i >= 0 && i < n) {
    // The lexeme runs to the next quote that is not doubled ('' stands for one quote).
    let lexeme = '';
    let j = i + 1;
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
    const pos: number[] = [];
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
          if (digits) pos.push(v);
          v = 0;
          digits = false;
        } else break;
      }
      if (digits) pos.push(v);
    }
    positions.set(lexeme, pos);
    length += Math.max(1, pos.length);
    i = text.indexOf("'", j);
  }
  return { positions, length };
}
