import type { EntityManager } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { audienceCondition, bound } from '../../platform/db/sql.ts';

// The statements resolving a query's selectors to rows of the account (memory_peer, memory_session,
// source); what is allowed is decided in boundary.ts.

/** The peers' or sessions' rows of these labels inside the key's reach. */
export async function labelsInReach(em: EntityManager, table: 'memory_peer' | 'memory_session', reach: Reach, labels: string[]) {
  const inReach = audienceCondition('audience', reach.audiences);
  return bound<{ id: string; label: string }>(
    em,
    `select id, label from ${table} where account_id = ? and workspace = 'default' and label = any(?::text[])${inReach.sql}`,
    [reach.accountId, labels, ...inReach.params],
  );
}

/** The account's sources of these ids that are not deleted, with their audience. */
export async function sourceAudiences(em: EntityManager, accountId: string, ids: string[]) {
  return bound<{ id: string; audience: string | null }>(
    em,
    `select id, audience from source where account_id = ? and id = any(?::uuid[]) and status <> 'deleted'`,
    [accountId, ids],
  );
}
