import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../platform/errors.ts';
import { assertSameRequest, operationInProgress } from '../idempotency.ts';
import { reserve, reserveArgs, reservedFrom, type Reserved, type ReserveInput, type ReserveRow } from '../metering/reservations.ts';
import type { Analysis } from '../retrieval/retrieve.ts';
import { abandonOperation, claimAndAnalyse, heldOperation, takeOverStale, type StoredOperation } from './operations.queries.ts';

/**
 * Stored idempotent query operations (spec 2.3, 7, 8 rule 5). The first request with a key claims the
 * row (status running); an exact retry of a completed operation replays its stored result and headers
 * without spending; the same key with other inputs is idempotency_conflict; a retry while the first
 * is still running is operation_in_progress; a row older than the retention period is
 * idempotency_expired. A running row older than STALE_AFTER_MS belongs to a process that died: the
 * retry takes it over. A failed operation's row is removed, so a retry starts anew.
 */

export const STALE_AFTER_MS = 120_000;


/**
 * `reserved`: the credit reservation made with a new claim; absent when a stale claim was taken over
 * (the caller reserves then). `analysed`: the row of the query's analysis columns selected with a new
 * claim; absent likewise.
 */
export type Begun =
  | { kind: 'started'; operationId: string; reserved?: Reserved; analysed?: Record<string, unknown> }
  | { kind: 'replay'; stored: StoredOperation };

/**
 * Claims the key (or finds what holds it) with claimAndAnalyse (operations.queries.ts). A refused reservation (402, 429)
 * releases the claim and is thrown.
 */
export async function beginOperation(
  em: EntityManager,
  input: {
    accountId: string; idempotencyKey: string; requestHash: string; retentionMs: number; reserve: Omit<ReserveInput, 'reservationId'>;
    analysis: Analysis | null;
  },
): Promise<Begun> {
  const id = randomUUID();
  const now = new Date();
  const [created] = await claimAndAnalyse<ReserveRow & Record<string, unknown>>(em, { id, ...input }, reserveArgs(input.reserve, now), input.analysis);
  if (created) {
    const request = { ...input.reserve, reservationId: id };
    try {
      // 'stale': the balance is created or renewed, then reserved on its own (nothing was written).
      const reserved = created.r_status === 'stale' ? await reserve(em, request, now) : reservedFrom(request, created, now);
      return { kind: 'started', operationId: id, reserved, ...(input.analysis ? { analysed: created } : {}) };
    } catch (err) {
      await abandonOperation(em, id);
      throw err;
    }
  }
  const row = await heldOperation(em, input.accountId, input.idempotencyKey, { retentionMs: input.retentionMs, staleAfterMs: STALE_AFTER_MS });
  // The row went away between the two statements (its operation failed): claim the key again.
  if (!row) return beginOperation(em, input);
  if (row.expired) throw new AppError(409, 'idempotency_expired', 'The stored operation for this idempotencyKey has expired; start anew with a new key.');
  assertSameRequest({ requestHash: row.request_hash }, input.requestHash, null, 'This idempotencyKey was used for a different query.');
  if (row.status === 'completed') return { kind: 'replay', stored: { result: row.result!, headers: row.headers ?? {} } };
  if (row.stale) {
    if (await takeOverStale(em, row.id, STALE_AFTER_MS)) return { kind: 'started', operationId: row.id };
  }
  throw operationInProgress('A query with this idempotencyKey is still running; retry shortly.', { 'retry-after': '1' });
}
