import { contentStems, words } from '../retrieval/text.ts';

/**
 * Citation validation: a sentence is supported when the evidence it cites contains (nearly) all of its
 * content words and every token with a digit in it (numbers, codes, dates). Everything the answerers
 * return passes through here, and so does every claim a model derives from a message (its quote).
 */
export function isSupported(sentence: string, citedTexts: string[]): boolean {
  const own = contentStems(sentence);
  if (own.length === 0 || citedTexts.length === 0) return false;
  const evidence = citedTexts.join('\n');
  const stems = new Set(contentStems(evidence));
  const overlap = own.filter((w) => stems.has(w)).length / own.length;
  if (overlap < 0.75) return false;
  const evidenceWords = new Set(words(evidence));
  return words(sentence).filter((w) => /\d/.test(w)).every((w) => evidenceWords.has(w));
}

/** Share of the query's content words found in a text (0..1). */
export function queryOverlap(queryStems: Set<string>, text: string): number {
  if (queryStems.size === 0) return 0;
  const own = new Set(contentStems(text));
  let n = 0;
  for (const q of queryStems) if (own.has(q)) n++;
  return n / queryStems.size;
}
