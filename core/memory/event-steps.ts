import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { ClaimDeriver, Proposal } from './deriver.ts';
import { deletePeer, deleteSession, finishEvents, type Claimed, type StoredMessage } from './events.queries.ts';

// Processing of memory events, called by the activities. Each step is idempotent: a retried activity
// finds the event already finished, or writes the same rows under the same deterministic ids.

/** Ends events `failed` with a message for the caller (after retries ran out); finished ones stay as they are. */
export async function failEvents(em: Em, eventIds: string[], message: string): Promise<void> {
  await finishEvents(em, eventIds, { status: 'failed', outcome: null, failure: message });
}

/** The claims an add-event proposes, possibly none (infer false, nothing salient). Outside any transaction. */
export async function derive(deriver: ClaimDeriver, ev: Claimed, messages: StoredMessage[]): Promise<Proposal[]> {
  return ev.infer ? deriver.derive({ peer: ev.peer_label ?? 'the peer', messages }) : [];
}

/**
 * Processes a begun deletion event: removes the peer or session row (everything derived cascades with
 * it), scrubs the label from the account's events, and ends the event succeeded, in one transaction.
 */
export async function processDeletion(em: Em, ev: Claimed): Promise<{ status: string }> {
  return em.transactional(async (tx) => {
    if (ev.kind === 'delete_peer') await deletePeer(tx, ev.peer_id!);
    else await deleteSession(tx, ev.session_id!);
    await finishEvents(tx, [ev.id], {
      status: 'succeeded',
      outcome: { note: ev.kind === 'delete_peer' ? 'The peer and its memory were deleted.' : 'The session and its messages were deleted.' },
      failure: null,
    });
    return { status: 'succeeded' };
  });
}
