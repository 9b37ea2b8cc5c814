import { proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export type SelfCheckInput = { requestedBy: string };
export type SelfCheckResult = { checkId: string; workerIdentity: string; checkedAt: string };

// A database write that is safe to repeat: short timeouts so an operator's self-check answers quickly,
// a few retries so a brief database blip does not fail it.
const { recordSelfCheck } = proxyActivities<Activities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 3, initialInterval: '200 milliseconds' },
});

/** Proves API -> Temporal -> worker -> PostgreSQL end to end. */
export async function selfCheckWorkflow(input: SelfCheckInput): Promise<SelfCheckResult> {
  return recordSelfCheck({ checkId: workflowInfo().workflowId, requestedBy: input.requestedBy });
}
