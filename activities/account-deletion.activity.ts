import {
  finalizeAccountDeletion,
  purgeAccountData,
  revokeAccountCredentials,
} from '../core/auth/account-deletion.ts';
import type { ActivityDeps } from './deps.ts';
import { withHeartbeats } from './heartbeats.ts';

// Each step heartbeats, so a step whose worker died is retried elsewhere after the workflow's heartbeat
// timeout rather than its (generous) start-to-close timeout, while the API and the user wait.
export function createAccountDeletionActivities(deps: ActivityDeps) {
  return {
    async revokeAccountCredentials(input: { accountId: string }) {
      await withHeartbeats(() => revokeAccountCredentials(deps.orm.em.fork(), input.accountId));
    },
    async purgeAccountData(input: { accountId: string }) {
      await withHeartbeats(() => purgeAccountData(deps.orm.em.fork(), input.accountId));
    },
    async finalizeAccountDeletion(input: { accountId: string }) {
      await withHeartbeats(() => finalizeAccountDeletion(deps.orm.em.fork(), input.accountId));
    },
  };
}
