import type { EntityManager } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { bound, inAudiences, sql } from '../../platform/db/sql.ts';

// The statements resolving a query's selectors to rows of the account (memory_peer, memory_session,
// source); what is allowed is decided in boundary.ts.

/** The peers' or sessions' rows of these labels inside the key's reach. */
export async function labelsInReach(em: EntityManager, table: 'memory_peer' | 'memory_session', reach: Reach, labels: string[]) {
  return bound<{ id: string; label: string }>(em, sql`select id, label from ${sql.raw(table)}
    where account_id = ${reach.accountId} and workspace = 'default' and label = any(${labels}::text[])${inAudiences('audience', reach.audiences)}`);
}

/** The account's sources of these ids that are not deleted, with their audience. */
export async function sourceAudiences(em: EntityManager, accountId: string, ids: string[]) {
  return bound<{ id: string; audience: string | null }>(
    em,
    sql`select id, audience from source where account_id = ${accountId} and id = any(${ids}::uuid[]) and status <> 'deleted'`,
  );
}
