/**
 * The one ranking measure of everything an account can search (source records, memory messages and
 * claims): Okapi BM25 with the account's own statistics, and for messages, their neighbours' scores.
 *
 * - k1 0.9, b 0.4: the defaults of Anserini (Lucene) for short documents, not tuned to any data set.
 * - Length is normalised per kind: a message is long or short among messages, an excerpt among
 *   records, so short messages are not favoured over every excerpt (or the reverse).
 * - Document frequencies and the number of documents count every searchable document of the account,
 *   whatever the query's boundary: a term's rarity is the account's, and the same for every caller.
 * - Conversational context: a turn often answers the one before it (the question's words are in the
 *   question, the answer in the reply). A message whose neighbour in the session scores better than
 *   itself gets ADJACENT_WEIGHT of the difference (its neighbours further away count at NEIGHBOUR_DECAY
 *   per step): a weak turn next to a strong one rises toward it, a strong turn is not counted twice
 *   (docs/benchmarks.md, the recall ablation).
 */

export const K1 = 0.9;
export const B = 0.4;
export const ADJACENT_WEIGHT = 0.5;
export const NEIGHBOUR_DECAY = 0.5;
/** Neighbours on each side that contribute. */
export const NEIGHBOURS = 2;

export const RECORD = 0;
export const MESSAGE = 1;
export const CLAIM = 2;
export type DocKind = typeof RECORD | typeof MESSAGE | typeof CLAIM;

/** Searchable documents and their total length, per kind, and each lexeme's document frequency. */
export type Statistics = { docs: [number, number, number]; length: [number, number, number]; df: (lexeme: string) => number };

export function idf(docs: number, df: number): number {
  return Math.log(1 + (docs - df + 0.5) / (df + 0.5));
}

/** One term's BM25 contribution: its idf, its frequency in the document, the document's and its kind's average length. */
export function termScore(idfValue: number, tf: number, length: number, averageLength: number): number {
  return (idfValue * tf * (K1 + 1)) / (tf + K1 * (1 - B + (B * length) / Math.max(averageLength, 1)));
}

export const totalDocs = (s: Pick<Statistics, 'docs'>) => s.docs[0] + s.docs[1] + s.docs[2];
export const averageLength = (s: Pick<Statistics, 'docs' | 'length'>, kind: DocKind) => (s.docs[kind] ? s.length[kind] / s.docs[kind] : 1);
