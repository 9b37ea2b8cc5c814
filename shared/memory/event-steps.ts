import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';
import type { ClaimDeriver, Proposal } from './deriver.ts';
import type { Claimed, StoredMessage } from './events.ts';

// Processing of memory events, called by the activities. Each step is idempotent: a retried activity
// finds the event already finished, or writes the same rows under the same deterministic ids.

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

async function finish(tx: Em, eventIds: string[], status: 'succeeded' | 'failed', outcome: Record<string, unknown> | null, failure: string | null) {
  await bound(
    tx,
    `update memory_event set status = ?, completed_at = now(), outcome = ?::jsonb, failure = ?::jsonb
      where id = any(?::uuid[]) and status in ('queued', 'running')`,
    [status, outcome ? JSON.stringify(outcome) : null, failure ? JSON.stringify({ message: failure }) : null, eventIds],
  );
}

/** Ends events `failed` with a message for the caller (after retries ran out); finished ones stay as they are. */
export async function failEvents(em: Em, eventIds: string[], message: string): Promise<void> {
  await finish(em, eventIds, 'failed', null, message);
}


/** The claim an add-event proposes, or null (infer false, nothing salient). Outside any transaction. */
export async function derive(deriver: ClaimDeriver, ev: Claimed, messages: StoredMessage[]): Promise<Proposal | null> {
  return ev.infer ? deriver.derive({ peer: ev.peer_label ?? 'the peer', messages }) : null;
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

/**
 * Processes a begun deletion event: removes the peer or session row (everything derived cascades with
 * it), scrubs the label from the account's events, and ends the event succeeded, in one transaction.
 */
export async function processDeletion(em: Em, ev: Claimed): Promise<{ status: string }> {
  return em.transactional(async (tx) => {
    if (ev.kind === 'delete_peer') {
      await bound(tx, 'delete from memory_peer where id = ?', [ev.peer_id]);
      await bound(tx, 'update memory_event set peer_label = null where peer_id = ?', [ev.peer_id]);
    } else {
      await bound(tx, 'delete from memory_session where id = ?', [ev.session_id]);
      await bound(tx, 'update memory_event set session_label = null where session_id = ?', [ev.session_id]);
    }
    await finish(tx, [ev.id], 'succeeded', { note: ev.kind === 'delete_peer' ? 'The peer and its memory were deleted.' : 'The session and its messages were deleted.' }, null);
    return { status: 'succeeded' };
  });
}
