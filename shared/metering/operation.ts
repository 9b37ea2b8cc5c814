import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { startCreditSettlement } from '../temporal/workflows.ts';
import { quotaHeaders } from './quotas.ts';
import { creditHeaders, reserve, settle, type Outcome, type Reserved, type ReserveInput, type Settled } from './reservations.ts';

export type MeteringDeps = {
  em: EntityManager;
  temporal: Client;
  taskQueue: string;
  /** How long the settlement workflow waits before settling a reservation the API did not. */
  settlementGraceMs: number;
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
 * Runs one metered operation: reserve the maximum cost (402/429 before any work), hand the reservation
 * to its settlement workflow, do the work, settle, and return the credit and quota headers of spec
 * section 8. If the settlement cannot be recorded the caller gets 503 credit_settlement_failed with the
 * standing debit in the headers, and the workflow settles it later.
 */
export async function runMetered<T>(
  deps: MeteringDeps,
  input: Omit<ReserveInput, 'reservationId'> & { reservationId?: string },
  work: (reserved: Reserved) => Promise<WorkResult<T>>,
): Promise<{ value: T; headers: Record<string, string>; settled: Settled; reserved: Reserved }> {
  const reservationId = input.reservationId ?? randomUUID();
  const reserved = await reserve(deps.em, { ...input, reservationId });
  const quota = reserved.quota ? quotaHeaders(reserved.quota) : {};
  try {
    await startCreditSettlement(deps.temporal, deps.taskQueue, reservationId, deps.settlementGraceMs);
  } catch (err) {
    // Without a durable owner the reservation must not stay open: give everything back and refuse.
    deps.logger.error({ err, reservationId }, 'could not start the settlement workflow');
    const s = await settle(deps.em, reservationId, 'retrieval_failed');
    throw new AppError(503, 'service_unavailable', 'Background processing is unavailable; nothing was charged.', {
      ...creditHeaders(s.balance, 0),
      ...quota,
    });
  }

  let result: WorkResult<T>;
  try {
    result = await work(reserved);
  } catch (err) {
    const outcome: Outcome = err instanceof AfterRetrievalError ? 'failed_after_retrieval' : 'retrieval_failed';
    if (!(err instanceof AppError) || err.status >= 500) deps.logger.error({ err, reservationId }, 'metered work failed');
    const s = await settleOrFail(deps, reserved, outcome, 0, quota);
    throw withHeaders(err, { ...creditHeaders(s.balance, s.charged), ...quota });
  }
  const s = await settleOrFail(deps, reserved, result.outcome, result.providerCost ?? 0, quota);
  return { value: result.value, headers: { ...creditHeaders(s.balance, s.charged), ...quota }, settled: s, reserved };
}

async function settleOrFail(
  deps: MeteringDeps,
  reserved: Reserved,
  outcome: Outcome,
  providerCost: number,
  quota: Record<string, string>,
): Promise<Settled> {
  try {
    return await settle(deps.em, reserved.reservationId, outcome, providerCost);
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
