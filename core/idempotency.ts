import { withinReach, type Reach } from './auth/principal.ts';
import { AppError } from '../platform/errors.ts';
import { canonicalJson, sha256Hex } from '../platform/hash.ts';

// Idempotency keys (spec 2.3), one rule for every write that takes one: queries (query_operation),
// ingest submissions (ingest_job), memory writes (memory_event) and claim changes (memory_claim_history).
// The first request with a key stores the digest of its inputs; a later request with the key either is
// the same request (its stored outcome is replayed, nothing is spent) or is refused.

/** The digest of everything that makes two requests the same operation: sha256 of canonical JSON. */
export function requestHash(inputs: unknown): string {
  return sha256Hex(canonicalJson(inputs));
}

/** What a key already holds: the digest of the inputs that took it, and the audience of what they made. */
export type Held = { requestHash: string | null; audience?: string | null };

/**
 * Throws 409 idempotency_conflict unless `held` was taken by these same inputs and is inside the
 * caller's reach: a key used by a write outside the caller's audiences answers like a key used for
 * another write (what it made stays unseen). When it returns, the caller replays what the key holds.
 */
export function assertSameRequest(held: Held, hash: string, reach: Reach | null, conflict: string): void {
  if (held.requestHash !== hash || (reach && !withinReach(reach, held.audience ?? null))) {
    throw new AppError(409, 'idempotency_conflict', conflict);
  }
}

/** 409 operation_in_progress: the request that holds the key has not finished; retry shortly. */
export function operationInProgress(message: string, headers?: Record<string, string>): AppError {
  return new AppError(409, 'operation_in_progress', message, headers);
}
