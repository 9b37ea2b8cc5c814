import { proxyActivities } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

export type CreditSettlementInput = { reservationId: string };

// Money must never be lost: retry forever with backoff capped at a minute. The activity is idempotent
// (a settled reservation is returned as is), so a retry after a crash writes nothing twice.
const { settleReservation } = proxyActivities<Activities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

/**
 * The durable owner of one credit reservation. It is started with a delay when credits are reserved;
 * by then the API has normally settled the reservation itself and this finds nothing to do. If the API
 * died (or could not record the settlement), this settles it: base credit kept, provider work refunded.
 */
export async function creditSettlementWorkflow(input: CreditSettlementInput) {
  return settleReservation({ reservationId: input.reservationId, outcome: 'abandoned' });
}
