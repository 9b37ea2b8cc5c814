import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../db/sql.ts';

// The self-check's statements (self_check); self-check.ts records one.

/** Inserts the check unless a row with its id exists. */
export async function insertSelfCheck(em: EntityManager, r: { checkId: string; requestedBy: string; workerIdentity: string }): Promise<void> {
  await bound(em, sql`insert into self_check (id, requested_by, worker_identity, checked_at)
    values (${r.checkId}, ${r.requestedBy}, ${r.workerIdentity}, now()) on conflict (id) do nothing`);
}

export async function selfCheckRow(em: EntityManager, checkId: string) {
  const [row] = await bound<{ id: string; worker_identity: string; checked_at: Date }>(em,
    sql`select id, worker_identity, checked_at from self_check where id = ${checkId}`);
  return row;
}
