import type { EntityManager } from '@mikro-orm/postgresql';
import { insertLexiconWords } from './lexicon.queries.ts';

// The account's lexicon (record_lexicon): the distinct words of its source excerpts, where retrieval
// looks up near spellings of a name (core/retrieval/candidates.queries.ts). It only suggests spellings: the
// evidence itself is then found through the records' full-text index, inside the query's boundary.

const WORD = /[\p{L}\p{N}]+/gu;
const LETTER = /\p{L}/u;
/** Shorter words are never within trigram similarity of the four-letter-or-longer names looked up. */
const MIN_WORD = 3;
/** Words per INSERT: a large document's vocabulary travels in bounded statements. */
const INSERT_CHUNK = 20_000;

/**
 * Distinct lower-cased words of `texts`, sorted (concurrent inserts then take their locks in one
 * order). Only tokens with a letter: near spellings are looked up for names, and a document of
 * numbered lines or figures would otherwise add every number (the full-text index finds those exactly).
 */
export function lexiconWords(texts: string[]): string[] {
  const words = new Set<string>();
  for (const t of texts) for (const w of t.toLowerCase().match(WORD) ?? []) if (w.length >= MIN_WORD && LETTER.test(w)) words.add(w);
  return [...words].sort();
}

/**
 * Adds the words the account's lexicon lacks. Its own statement, outside the records' transaction:
 * a word is harmless without records, and concurrent jobs of one account never wait on each other's
 * uncommitted words while they store records.
 */
export async function addToLexicon(em: EntityManager, accountId: string, words: string[]): Promise<void> {
  for (let i = 0; i < words.length; i += INSERT_CHUNK) {
    await insertLexiconWords(em, accountId, words.slice(i, i + INSERT_CHUNK));
  }
}
