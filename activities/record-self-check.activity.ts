import type { ActivityDeps } from './deps.ts';
import { recordSelfCheck } from '../platform/ops/self-check.ts';

export function createRecordSelfCheck(deps: ActivityDeps) {
  return async function recordSelfCheckActivity(input: { checkId: string; requestedBy: string }) {
    return recordSelfCheck(deps.orm.em.fork(), { ...input, workerIdentity: deps.workerIdentity });
  };
}
