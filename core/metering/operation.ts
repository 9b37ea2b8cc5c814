import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../platform/errors.ts';
import type { Logger } from '../../platform/logger.ts';
import { quotaHeaders } from './quotas.ts';
import { creditHeaders, reserve, settle, type Outcome, type Reserved, type ReserveInput, type Settled } from './reservations.ts';

export type MeteringDeps = {
  em: EntityManager;
  logger: Logger;
};

export type WorkResult<T> = { value: T; outcome: Exclude<Outcome, 'abandoned'>; providerCost?: number };

/** Marks an error thrown after canonical retrieval began: the base credit is then kept. */
export class AfterRetrievalError extends Error {
  readonly original: unknown;
  constructor(original: unknown) {
    super('failed after retrieval');
    this.original = original;
  }
}

function withHeaders(err: unknown, headers: Record<string, string>): AppError {
  const inner = err instanceof AfterRetrievalError ? err.original : err;
  if (inner instanceof AppError) return new AppError(inner.status, inner.code, inner.message, { ...inner.headers, ...headers });
  return new AppError(500, 'internal_error', 'Internal server error.', headers);
}

/**
 * Runs one metered operation: reserve the maximum cost (402/429 before any work), do the work, settle,
 * and return the credit and quota headers of spec section 8. Reserve and settle are one database round
 * trip each. If the settlement cannot be recorded (or the API dies first) the caller gets 503
 * credit_settlement_failed with the standing debit in the headers, and the worker's settlement sweeper
 * settles the reservation once its grace period has passed (base credit kept, provider work refunded).
 */
export async function runMetered<T>(
  deps: MeteringDeps,
  input: Omit<ReserveInput, 'reservationId'> & { reservationId?: string; reserved?: Reserved },
  work: (reserved: Reserved) => Promise<WorkResult<T>>,
): Promise<{ value: T; headers: Record<string, string>; settled: Settled; reserved: Reserved }> {
  // A reservation the caller already made (a query's is made with its operation claim) is used as is.
  const { reserved: made, ...request } = input;
  const reserved = made ?? await reserve(deps.em, { ...request, reservationId: request.reservationId ?? randomUUID() });
  const quota = reserved.quota ? quotaHeaders(reserved.quota) : {};

  let result: WorkResult<T>;
  try {
    result = await work(reserved);
  } catch (err) {
    const outcome: Outcome = err instanceof AfterRetrievalError ? 'failed_after_retrieval' : 'retrieval_failed';
    if (!(err instanceof AppError) || err.status >= 500) deps.logger.error({ err, reservationId: reserved.reservationId }, 'metered work failed');
    // A failure's settlement is flushed at once: the error may be answered without a later commit.
    const s = await settleOrFail(deps, reserved, outcome, { providerCost: 0, quota, flushLater: false });
    throw withHeaders(err, { ...creditHeaders(s.balance, s.charged), ...quota });
  }
  const s = await settleOrFail(deps, reserved, result.outcome, { providerCost: result.providerCost ?? 0, quota, flushLater: input.flushLater });
  return { value: result.value, headers: { ...creditHeaders(s.balance, s.charged), ...quota }, settled: s, reserved };
}

async function settleOrFail(
  deps: MeteringDeps,
  reserved: Reserved,
  outcome: Outcome,
  { providerCost, quota, flushLater }: { providerCost: number; quota: Record<string, string>; flushLater: boolean | undefined },
): Promise<Settled> {
  try {
    return await settle(deps.em, reserved.reservationId, outcome, { providerCostUsed: providerCost, flushLater });
  } catch (err) {
    deps.logger.error({ err, reservationId: reserved.reservationId }, 'credit settlement failed; the workflow will settle');
    throw new AppError(
      503,
      'credit_settlement_failed',
      'The credit charge or refund could not be recorded. Keep the request id; it will be settled automatically.',
      { ...creditHeaders(reserved.balance, reserved.held), ...quota },
    );
  }
}
