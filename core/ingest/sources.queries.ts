import type { EntityManager } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { bound, inAudiences, sql } from '../../platform/db/sql.ts';

// The source aggregate's statements as the API sees sources (deletion requests, the overview).

/** The source, locked (for update), when it is the account's and inside the key's audiences. */
export async function lockSourceInReach(tx: EntityManager, reach: Reach, sourceId: string) {
  const [source] = await bound<{ id: string; audience: string | null }>(tx, sql`select id, audience from source
    where id = ${sourceId} and account_id = ${reach.accountId}${inAudiences('audience', reach.audiences)} for update`);
  return source;
}

/** The account's sources that are not deleted, newest first, with their record counts. */
export async function activeSources(em: EntityManager, accountId: string, limit: number) {
  return bound<{
    id: string; kind: string; url: string | null; filename: string | null; title: string | null; content_type: string;
    status: string; quarantine_reason: string | null; dated_at: string | null; created_at: Date; records: string;
  }>(em, sql`select s.id, s.kind, s.url, s.filename, s.title, s.content_type, s.status, s.quarantine_reason,
      to_char(s.dated_at, 'YYYY-MM-DD') as dated_at, s.created_at,
      (select count(*) from record r where r.source_id = s.id) as records
    from source s where s.account_id = ${accountId} and s.status <> 'deleted' order by s.created_at desc limit ${limit}`);
}

/** How many records the account's active sources hold. */
export async function activeRecordTotal(em: EntityManager, accountId: string): Promise<number> {
  const [count] = await bound<{ total: string }>(em, sql`select count(*) as total from record r join source s on s.id = r.source_id
    where r.account_id = ${accountId} and s.status = 'active'`);
  return Number(count?.total ?? 0);
}
