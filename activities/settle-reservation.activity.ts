import { AppError } from '../shared/errors.ts';
import { settle, type Outcome } from '../shared/metering/reservations.ts';
import type { ActivityDeps } from './deps.ts';

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
