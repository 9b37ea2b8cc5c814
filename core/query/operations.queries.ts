import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, prepared, sql } from '../../platform/db/sql.ts';
import type { Analysis } from '../retrieval/retrieve.ts';

// The query_operation aggregate's statements; the idempotency rules are in operations.ts.

export type StoredOperation = { result: Record<string, unknown>; headers: Record<string, string> };

/**
 * claimAndAnalyse: the statement that starts a new query, one round trip instead of three. It claims
 * the idempotency key (a `running` query_operation row), reserves the query's credits (cairn_reserve,
 * with the operation's id as the reservation's) and selects the query's analysis (retrieval's first
 * reads: index versions and lexemes, retrieve.ts Analysis). When the key is already held it returns no
 * row. The claim commits without waiting for its disk flush (synchronous_commit off for this
 * statement's transaction only): nothing is answered before the operation's completion, a synchronous
 * commit that flushes this one with it (WAL is flushed in order). A crash before that loses at most a
 * claim whose query answered nothing; the retry then starts anew.
 */
export async function claimAndAnalyse<T>(
  em: EntityManager, op: { id: string; accountId: string; idempotencyKey: string; requestHash: string }, reserveArgs: unknown[], analysis: Analysis | null,
): Promise<T[]> {
  return prepared<T>(em, sql`with op as (
       insert into query_operation (id, account_id, idempotency_key, request_hash, status)
       select ${op.id}, ${op.accountId}, ${op.idempotencyKey}, ${op.requestHash}, 'running' from (select set_config('synchronous_commit', 'off', true)) c
       on conflict (account_id, idempotency_key) do nothing returning id)
     select f.*${analysis ? sql`, ${analysis.columns}` : sql.empty} from op, lateral cairn_reserve(op.id, ${sql.join(reserveArgs)}) f`);
}

/** What holds the key: the operation, and whether it is past retention (expired) or its runner presumed dead (stale). */
export async function heldOperation(em: EntityManager, accountId: string, idempotencyKey: string, ages: { retentionMs: number; staleAfterMs: number }) {
  const [row] = await bound<{
    id: string; request_hash: string; status: 'running' | 'completed'; result: Record<string, unknown> | null;
    headers: Record<string, string> | null; expired: boolean; stale: boolean;
  }>(em, sql`select id, request_hash, status, result, headers,
      created_at < now() - (${ages.retentionMs} * interval '1 millisecond') as expired,
      started_at < now() - (${ages.staleAfterMs} * interval '1 millisecond') as stale
    from query_operation where account_id = ${accountId} and idempotency_key = ${idempotencyKey}`);
  return row;
}

/** Takes over a running operation whose runner went quiet; false when another retry took it first. */
export async function takeOverStale(em: EntityManager, operationId: string, staleAfterMs: number): Promise<boolean> {
  const taken = await bound<{ id: string }>(em, sql`update query_operation set started_at = now() where id = ${operationId} and status = 'running'
      and started_at < now() - (${staleAfterMs} * interval '1 millisecond') returning id`);
  return taken.length > 0;
}

export async function completeOperation(em: EntityManager, operationId: string, stored: StoredOperation): Promise<void> {
  await prepared(em, sql`update query_operation set status = 'completed', result = ${JSON.stringify(stored.result)}::jsonb,
    headers = ${JSON.stringify(stored.headers)}::jsonb, completed_at = now() where id = ${operationId}`);
}

export async function abandonOperation(em: EntityManager, operationId: string): Promise<void> {
  await bound(em, sql`delete from query_operation where id = ${operationId} and status = 'running'`);
}

/**
 * Forgets the stored results (kept for exact retries) that quote a redacted message: a retry with
 * their key then runs anew instead of replaying its text.
 */
export async function forgetResultsCiting(em: EntityManager, accountId: string, messageId: string): Promise<void> {
  await bound(em, sql`delete from query_operation where account_id = ${accountId} and status = 'completed'
      and strpos(result::text, ${messageId}) > 0`);
}
