import { Context } from '@temporalio/activity';
import { AppError } from '../shared/errors.ts';
import { settle, staleReservations, type Outcome } from '../shared/metering/reservations.ts';
import type { ActivityDeps } from './deps.ts';

const SWEEP_BATCH = 200;

export function createSettleReservation(deps: ActivityDeps) {
  return async function settleReservation(input: { reservationId: string; outcome: Outcome }) {
    try {
      const s = await settle(deps.orm.em.fork(), input.reservationId, input.outcome);
      return { reservationId: s.reservationId, charged: s.charged, refunded: s.refunded, gone: false };
    } catch (err) {
      // The account was deleted with its reservations: there is nothing left to settle.
      if (err instanceof AppError && err.status === 404) {
        return { reservationId: input.reservationId, charged: 0, refunded: 0, gone: true };
      }
      throw err;
    }
  };
}

/**
 * Settles every reservation still held after the grace period as abandoned (base credit kept,
 * provider work refunded). Each settlement is idempotent and its own transaction, so a retry after a
 * crash settles the rest and never charges twice; a reservation the API settles meanwhile is left as
 * it is. One that cannot be settled is logged and left for the next sweep without holding up the others.
 */
export function createSettleStaleReservations(deps: ActivityDeps) {
  const settleOne = createSettleReservation(deps);
  return async function settleStaleReservations(input: { olderThanMs: number }): Promise<{ settled: number; failed: number }> {
    let settled = 0;
    let failed = 0;
    for (;;) {
      const ids = await staleReservations(deps.orm.em.fork(), input.olderThanMs, SWEEP_BATCH);
      for (const reservationId of ids) {
        try {
          await settleOne({ reservationId, outcome: 'abandoned' });
          settled++;
        } catch (err) {
          failed++;
          deps.logger.error({ err, reservationId }, 'could not settle an abandoned credit reservation; the next sweep retries');
        }
        Context.current().heartbeat(settled + failed);
      }
      // A batch with failures would be fetched again at once: leave the rest to the next sweep.
      if (ids.length < SWEEP_BATCH || failed > 0) return { settled, failed };
    }
  };
}
