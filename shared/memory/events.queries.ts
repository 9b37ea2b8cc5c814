import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';
import type { Claimed, StoredMessage } from './events.ts';

// The memory event queue's statements as the worker uses them (memory_event, memory_message): the
// dispatcher's claims, a batch's begin and end, its messages, deletions. The decisions are in
// dispatcher.ts, batch.ts, event-steps.ts and commit.ts.

/**
 * Claims up to `limit` queued events nobody is processing, oldest first, for a new batch: events never
 * dispatched, and events whose dispatch went stale (the dispatcher died before the start, or the batch
 * never began them). SKIP LOCKED lets several workers' dispatchers claim at once without waiting.
 */
export async function claimBatch(em: Em, batchId: string, limit: number, staleMs: number): Promise<string[]> {
  const rows = await bound<{ id: string }>(
    em,
    `with picked as (
       select id, created_at from memory_event
        where status = 'queued' and (batch_id is null or dispatched_at < now() - make_interval(secs => ?))
        order by created_at, id limit ? for update skip locked),
     claimed as (
       update memory_event e set batch_id = ?, dispatched_at = now() from picked where e.id = picked.id
       returning e.id, picked.created_at)
     select id from claimed order by created_at, id`,
    [staleMs / 1000, limit, batchId],
  );
  return rows.map((r) => r.id);
}

const CLAIMED = 'id, account_id, kind, status, peer_id, session_id, peer_label, infer, agent_id, created_at';

/**
 * Marks the batch's unfinished events running and returns them oldest first. An event another batch
 * has taken over since (its dispatch went stale and it was dispatched again) is not this batch's.
 */
export async function beginBatch(em: Em, batchId: string, eventIds: string[]): Promise<Claimed[]> {
  return bound<Claimed>(
    em,
    `with begun as (
       update memory_event set status = 'running', started_at = coalesce(started_at, now())
        where id = any(?::uuid[]) and batch_id = ? and status in ('queued', 'running')
        returning ${CLAIMED})
     select * from begun order by created_at, id`,
    [eventIds, batchId],
  );
}

export async function finishEvents(tx: Em, eventIds: string[], status: 'succeeded' | 'failed', outcome: Record<string, unknown> | null, failure: string | null) {
  await bound(
    tx,
    `update memory_event set status = ?, completed_at = now(), outcome = ?::jsonb, failure = ?::jsonb
      where id = any(?::uuid[]) and status in ('queued', 'running')`,
    [status, outcome ? JSON.stringify(outcome) : null, failure ? JSON.stringify({ message: failure }) : null, eventIds],
  );
}



/** The stored messages of add-events, by event, in write order. */
export async function loadMessages(em: Em, eventIds: string[]): Promise<Map<string, StoredMessage[]>> {
  const rows = await bound<StoredMessage & { event_id: string }>(
    em,
    'select event_id, id, role, content, created_at, audience from memory_message where event_id = any(?::uuid[]) order by event_id, position',
    [eventIds],
  );
  const byEvent = new Map<string, StoredMessage[]>();
  for (const { event_id, ...m } of rows) {
    const list = byEvent.get(event_id);
    if (list) list.push(m);
    else byEvent.set(event_id, [m]);
  }
  return byEvent;
}

/** Removes a peer (its messages, claims and history cascade) and scrubs its label from the account's events. */
export async function deletePeer(tx: Em, peerId: string): Promise<void> {
  await bound(tx, 'delete from memory_peer where id = ?', [peerId]);
  await bound(tx, 'update memory_event set peer_label = null where peer_id = ?', [peerId]);
}

/** Removes a session (its messages cascade) and scrubs its label from the account's events. */
export async function deleteSession(tx: Em, sessionId: string): Promise<void> {
  await bound(tx, 'delete from memory_session where id = ?', [sessionId]);
  await bound(tx, 'update memory_event set session_label = null where session_id = ?', [sessionId]);
}
