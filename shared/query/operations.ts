import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, prepared, sql } from '../db/sql.ts';
import { AppError } from '../errors.ts';
import { assertSameRequest, operationInProgress } from '../idempotency.ts';
import { reserve, reserveArgs, reservedFrom, type Reserved, type ReserveInput, type ReserveRow } from '../metering/reservations.ts';
import type { Analysis } from '../retrieval/retrieve.ts';

/**
 * Stored idempotent query operations (spec 2.3, 7, 8 rule 5). The first request with a key claims the
 * row (status running); an exact retry of a completed operation replays its stored result and headers
 * without spending; the same key with other inputs is idempotency_conflict; a retry while the first
 * is still running is operation_in_progress; a row older than the retention period is
 * idempotency_expired. A running row older than STALE_AFTER_MS belongs to a process that died: the
 * retry takes it over. A failed operation's row is removed, so a retry starts anew.
 */

export const STALE_AFTER_MS = 120_000;

export type StoredOperation = { result: Record<string, unknown>; headers: Record<string, string> };

/**
 * `reserved`: the credit reservation made with a new claim; absent when a stale claim was taken over
 * (the caller reserves then). `analysed`: the row of the query's analysis columns selected with a new
 * claim; absent likewise.
 */
export type Begun =
  | { kind: 'started'; operationId: string; reserved?: Reserved; analysed?: Record<string, unknown> }
  | { kind: 'replay'; stored: StoredOperation };

type Row = { id: string; request_hash: string; status: 'running' | 'completed'; result: Record<string, unknown> | null; headers: Record<string, string> | null; expired: boolean; stale: boolean };

/**
 * CLAIM_AND_ANALYSE: the statement that starts a new query, one round trip instead of three. It claims
 * the idempotency key (a `running` query_operation row), reserves the query's credits (cairn_reserve,
 * with the operation's id as the reservation's) and selects the query's analysis (retrieval's first
 * reads: index versions and lexemes, retrieve.ts Analysis). When the key is already held it returns no
 * row. The claim commits without waiting for its disk flush (synchronous_commit off for this
 * statement's transaction only): nothing is answered before the operation's completion, a synchronous
 * commit that flushes this one with it (WAL is flushed in order). A crash before that loses at most a
 * claim whose query answered nothing; the retry then starts anew.
 */
function claimAndAnalyse(op: { id: string; accountId: string; idempotencyKey: string; requestHash: string }, reserveArgs: unknown[], analysis: Analysis | null) {
  return sql`with op as (
       insert into query_operation (id, account_id, idempotency_key, request_hash, status)
       select ${op.id}, ${op.accountId}, ${op.idempotencyKey}, ${op.requestHash}, 'running' from (select set_config('synchronous_commit', 'off', true)) c
       on conflict (account_id, idempotency_key) do nothing returning id)
     select f.*${analysis ? sql`, ${analysis.columns}` : sql.empty} from op, lateral cairn_reserve(op.id, ${sql.join(reserveArgs)}) f`;
}

/**
 * Claims the key (or finds what holds it) with CLAIM_AND_ANALYSE. A refused reservation (402, 429)
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
  const [created] = await prepared<ReserveRow & Record<string, unknown>>(
    em,
    claimAndAnalyse({ id, ...input }, reserveArgs(input.reserve, now), input.analysis),
  );
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
  const [row] = await bound<Row>(
    em,
    `select id, request_hash, status, result, headers,
            created_at < now() - (? * interval '1 millisecond') as expired,
            started_at < now() - (? * interval '1 millisecond') as stale
       from query_operation where account_id = ? and idempotency_key = ?`,
    [input.retentionMs, STALE_AFTER_MS, input.accountId, input.idempotencyKey],
  );
  // The row went away between the two statements (its operation failed): claim the key again.
  if (!row) return beginOperation(em, input);
  if (row.expired) throw new AppError(409, 'idempotency_expired', 'The stored operation for this idempotencyKey has expired; start anew with a new key.');
  assertSameRequest({ requestHash: row.request_hash }, input.requestHash, null, 'This idempotencyKey was used for a different query.');
  if (row.status === 'completed') return { kind: 'replay', stored: { result: row.result!, headers: row.headers ?? {} } };
  if (row.stale) {
    const taken = await bound<{ id: string }>(
      em,
      `update query_operation set started_at = now() where id = ? and status = 'running'
          and started_at < now() - (? * interval '1 millisecond') returning id`,
      [row.id, STALE_AFTER_MS],
    );
    if (taken.length) return { kind: 'started', operationId: row.id };
  }
  throw operationInProgress('A query with this idempotencyKey is still running; retry shortly.', { 'retry-after': '1' });
}

export async function completeOperation(em: EntityManager, operationId: string, stored: StoredOperation): Promise<void> {
  await prepared(
    em,
    `update query_operation set status = 'completed', result = ?::jsonb, headers = ?::jsonb, completed_at = now() where id = ?`,
    [JSON.stringify(stored.result), JSON.stringify(stored.headers), operationId],
  );
}

export async function abandonOperation(em: EntityManager, operationId: string): Promise<void> {
  await bound(em, `delete from query_operation where id = ? and status = 'running'`, [operationId]);
}
