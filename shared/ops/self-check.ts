import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../db/sql.ts';

export type SelfCheckRecord = { checkId: string; workerIdentity: string; checkedAt: string };

/**
 * Records one self-check. Idempotent: the row is keyed by the workflow id, so a retried activity returns
 * the row written by the first attempt instead of writing a second one.
 */
export async function recordSelfCheck(
  em: EntityManager,
  input: { checkId: string; requestedBy: string; workerIdentity: string },
): Promise<SelfCheckRecord> {
  await bound(em, sql`insert into self_check (id, requested_by, worker_identity, checked_at)
    values (${input.checkId}, ${input.requestedBy}, ${input.workerIdentity}, now()) on conflict (id) do nothing`);
  const [row] = await bound<{ id: string; worker_identity: string; checked_at: Date }>(em,
    sql`select id, worker_identity, checked_at from self_check where id = ${input.checkId}`);
  return { checkId: row!.id, workerIdentity: row!.worker_identity, checkedAt: new Date(row!.checked_at).toISOString() };
}
