import type { EntityManager } from '@mikro-orm/postgresql';
import { SelfCheck } from '../db/entities/index.ts';
import { bound } from '../db/sql.ts';

export type SelfCheckRecord = { checkId: string; workerIdentity: string; checkedAt: string };

/**
 * Records one self-check. Idempotent: the row is keyed by the workflow id, so a retried activity returns
 * the row written by the first attempt instead of writing a second one.
 */
export async function recordSelfCheck(
  em: EntityManager,
  input: { checkId: string; requestedBy: string; workerIdentity: string },
): Promise<SelfCheckRecord> {
  await bound(em, 
    `insert into self_check (id, requested_by, worker_identity, checked_at)
     values (?, ?, ?, now()) on conflict (id) do nothing`,
    [input.checkId, input.requestedBy, input.workerIdentity],
  );
  const row = await em.findOneOrFail(SelfCheck, { id: input.checkId });
  return { checkId: row.id, workerIdentity: row.workerIdentity, checkedAt: row.checkedAt.toISOString() };
}
