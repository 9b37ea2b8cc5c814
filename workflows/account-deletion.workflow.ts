import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export type AccountDeletionInput = { accountId: string };

// Database deletes that may be slow for a large account: a generous start-to-close timeout, and a
// heartbeat timeout so a step whose worker died is retried within seconds, not minutes. A few
// attempts only: the API waits for this workflow, and a failure leaves the account deletion_pending,
// from where the user retries (the retry starts a new run that finds finished steps done).
const steps = proxyActivities<Activities>({
  startToCloseTimeout: '5 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { maximumAttempts: 3, initialInterval: '500 milliseconds', backoffCoefficient: 2 },
});

export async function accountDeletionWorkflow(input: AccountDeletionInput): Promise<{ status: 'deleted' }> {
  await steps.revokeAccountCredentials(input);
  await steps.purgeAccountData(input);
  await steps.finalizeAccountDeletion(input);
  return { status: 'deleted' };
}
