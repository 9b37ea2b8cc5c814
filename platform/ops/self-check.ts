import type { EntityManager } from '@mikro-orm/postgresql';
import { insertSelfCheck, selfCheckRow } from './self-check.queries.ts';

export type SelfCheckRecord = { checkId: string; workerIdentity: string; checkedAt: string };

/**
 * Records one self-check. Idempotent: the row is keyed by the workflow id, so a retried activity returns
 * the row written by the first attempt instead of writing a second one.
 */
export async function recordSelfCheck(
  em: EntityManager,
  input: { checkId: string; requestedBy: string; workerIdentity: string },
): Promise<SelfCheckRecord> {
  await insertSelfCheck(em, input);
  const row = await selfCheckRow(em, input.checkId);
  return { checkId: row!.id, workerIdentity: row!.worker_identity, checkedAt: new Date(row!.checked_at).toISOString() };
}
