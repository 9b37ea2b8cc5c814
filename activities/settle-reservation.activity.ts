import { Context } from '@temporalio/activity';
import { AppError } from '../platform/errors.ts';
import { settle, staleReservations } from '../core/metering/reservations.ts';
import type { ActivityDeps } from './deps.ts';

const SWEEP_BATCH = 200;

/**
 * Settles one reservation as abandoned; one whose account was deleted with it has nothing left to
 * settle, and one its work settled meanwhile keeps that settlement (said in the log).
 */
async function settleAbandoned(deps: ActivityDeps, reservationId: string): Promise<void> {
  try {
    const s = await settle(deps.orm.em.fork(), reservationId, 'abandoned');
    if (s.already) deps.logger.info({ reservationId, settledAs: s.already }, `reservation already settled as ${s.already}; left as it is`);
  } catch (err) {
    if (!(err instanceof AppError && err.status === 404)) throw err;
  }
}

/**
 * Settles every reservation still held after the grace period as abandoned (base credit kept,
 * provider work refunded). Each settlement is idempotent and its own transaction, so a retry after a
 * crash settles the rest and never charges twice; a reservation the API settles meanwhile is left as
 * it is. One that cannot be settled is logged and left for the next sweep without holding up the others.
 */
export function createSettleStaleReservations(deps: ActivityDeps) {
  return async function settleStaleReservations(input: { olderThanMs: number }): Promise<{ settled: number; failed: number }> {
    let settled = 0;
    let failed = 0;
    for (;;) {
      const ids = await staleReservations(deps.orm.em.fork(), input.olderThanMs, SWEEP_BATCH);
      for (const reservationId of ids) {
        try {
          await settleAbandoned(deps, reservationId);
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
