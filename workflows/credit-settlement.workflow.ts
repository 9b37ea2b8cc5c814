import { continueAsNew, defineSignal, proxyActivities, setHandler, sleep } from '@temporalio/workflow';
import type { Activities } from '../activities/index.ts';

// A sweep settles a batch at a time and heartbeats per reservation; a silent worker is replaced soon.
const { settleStaleReservations } = proxyActivities<Activities>({
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

export type CreditSettlementSweeperInput = {
  /** A reservation still held this long after it was made is settled as abandoned (SETTLEMENT_GRACE_SECONDS). */
  graceMs: number;
  /** Pause between sweeps. */
  intervalMs: number;
};

/** Sweeps per run before continuing as new, which keeps each run's history short. */
const SWEEPS_PER_RUN = 200;

/** New settings for the running sweeper (each worker sends its own at start: the last one wins). */
export const configureSweeperSignal = defineSignal<[CreditSettlementSweeperInput]>('configureCreditSettlementSweeper');

/**
 * The durable owner of every credit reservation of this task queue: one long-lived execution with a
 * fixed id, started (or joined and reconfigured) by each worker at start. Every `intervalMs` it settles
 * the reservations the API did not settle within the grace period (it crashed, or could not record the
 * settlement).
 */
export async function creditSettlementSweeperWorkflow(input: CreditSettlementSweeperInput): Promise<never> {
  let config = input;
  setHandler(configureSweeperSignal, (next) => {
    config = next;
  });
  for (let i = 0; i < SWEEPS_PER_RUN; i++) {
    await settleStaleReservations({ olderThanMs: config.graceMs });
    await sleep(config.intervalMs);
  }
  return continueAsNew<typeof creditSettlementSweeperWorkflow>(config);
}
