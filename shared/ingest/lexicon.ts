import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';

// The account's lexicon (migration 0015): the distinct words of its source excerpts, where retrieval
// looks up near spellings of a name (shared/retrieval/candidates.ts). It only suggests spellings: the
// evidence itself is then found through the records' full-text index, inside the query's boundary.

const WORD = /[\p{L}\p{N}]+/gu;
/** Shorter words are never within trigram similarity of the four-letter-or-longer names looked up. */
const MIN_WORD = 3;

/** Distinct lower-cased words of `texts`, sorted (concurrent inserts then take their locks in one order). */
export function lexiconWords(texts: string[]): string[] {
  const words = new Set<string>();
  for (const t of texts) for (const w of t.toLowerCase().match(WORD) ?? []) if (w.length >= MIN_WORD) words.add(w);
  return [...words].sort();
}

/**
 * Adds the words the account's lexicon lacks. Its own statement, outside the records' transaction:
 * a word is harmless without records, and concurrent jobs of one account never wait on each other's
 * uncommitted words while they store records.
 */
export async function addToLexicon(em: EntityManager, accountId: string, words: string[]): Promise<void> {
  if (words.length === 0) return;
  await bound(em, 'insert into record_lexicon (account_id, word) select ?, w from unnest(?::text[]) as w on conflict do nothing', [accountId, words]);
}
