import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../../../platform/db/sql.ts';

// The statement of the account's lexicon (record_lexicon); which words and in what
// batches are decided in lexicon.ts.

/** Adds the words the account's lexicon lacks (a word already there is kept). */
export async function insertLexiconWords(em: EntityManager, accountId: string, words: string[]): Promise<void> {
  await bound(em, 'insert into record_lexicon (account_id, word) select ?, w from unnest(?::text[]) as w on conflict do nothing', [accountId, words]);
}
