import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../../platform/db/sql.ts';

// The statement of the account's lexicon (record_lexicon); which words and in what
// batches are decided in lexicon.ts.

/** Adds the words the account's lexicon lacks (a word already there is kept). */
export async function insertLexiconWords(em: EntityManager, accountId: string, words: string[]): Promise<void> {
  await bound(em, sql`insert into record_lexicon (account_id, word) select ${accountId}, w from unnest(${words}::text[]) as w on conflict do nothing`);
}
