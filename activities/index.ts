import type { ActivityDeps } from './deps.ts';
import { createAccountDeletionActivities } from './account-deletion.activity.ts';
import { createIngestActivities } from './ingest.activity.ts';
import { createMemoryActivities } from './memory.activity.ts';
import { createConfiguredDeriver } from '../core/memory/openai-deriver.ts';
import { createRecordSelfCheck } from './record-self-check.activity.ts';
import { createSettleStaleReservations } from './settle-reservation.activity.ts';

/** All activities, bound to their dependencies. Workflows see only the type. */
export function createActivities(deps: ActivityDeps) {
  return {
    recordSelfCheck: createRecordSelfCheck(deps),
    ...createAccountDeletionActivities(deps),
    settleStaleReservations: createSettleStaleReservations(deps),
    ...createIngestActivities(deps),
    ...createMemoryActivities(deps, createConfiguredDeriver(deps.memoryDeriver, deps.logger)),
  };
}

export type Activities = ReturnType<typeof createActivities>;
export type { ActivityDeps };
