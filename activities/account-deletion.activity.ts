import {
  finalizeAccountDeletion,
  purgeAccountData,
  revokeAccountCredentials,
} from '../shared/auth/account-deletion.ts';
import type { ActivityDeps } from './deps.ts';

export function createAccountDeletionActivities(deps: ActivityDeps) {
  return {
    async revokeAccountCredentials(input: { accountId: string }) {
      await revokeAccountCredentials(deps.orm.em.fork(), input.accountId);
    },
    async purgeAccountData(input: { accountId: string }) {
      await purgeAccountData(deps.orm.em.fork(), input.accountId);
    },
    async finalizeAccountDeletion(input: { accountId: string }) {
      await finalizeAccountDeletion(deps.orm.em.fork(), input.accountId);
    },
  };
}
