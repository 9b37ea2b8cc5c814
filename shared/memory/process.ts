import { deterministicUuid } from '../ids.ts';
import { historyMarker, revisionToken } from './claims.ts';
import { sql, type Em } from './db.ts';
import type { ClaimDeriver, Proposal } from './deriver.ts';
import type { EventKind } from './events.ts';
import { injectionWarning } from './screen.ts';

// Processing of memory events, called by the activities. Each step is idempotent: a retried activity
// finds the event already finished, or writes the same rows under the same deterministic ids.

type Claimed = { account_id: string; kind: EventKind; status: string; peer_id: string | null; session_id: string | null; peer_label: string | null; infer: boolean; agent_id: string | null };

/** Marks the event running (first attempt) and returns it; null when it already ended. */
export async function beginEvent(em: Em, eventId: string): Promise<Claimed | null> {
  const [row] = await sql<Claimed>(
    em,
    `update memory_event set status = 'running', started_at = coalesce(started_at, now())
      where id = ? and status in ('queued', 'running')
      returning account_id, kind, status, peer_id, session_id, peer_label, infer, agent_id`,
    [eventId],
  );
  return row ?? null;
}

async function finish(tx: Em, eventId: string, status: 'succeeded' | 'failed', outcome: Record<string, unknown> | null, failure: string | null) {
  await sql(
    tx,
    `update memory_event set status = ?, completed_at = now(), outcome = ?::jsonb, failure = ?::jsonb
      where id = ? and status in ('queued', 'running')`,
    [status, outcome ? JSON.stringify(outcome) : null, failure ? JSON.stringify({ message: failure }) : null, eventId],
  );
}

/** Ends an event `failed` with a message for the caller (after retries ran out). */
export async function failEvent(em: Em, eventId: string, message: string): Promise<void> {
  await finish(em, eventId, 'failed', null, message);
}

type StoredMessage = { id: string; role: 'user' | 'assistant' | 'system' | 'tool'; content: string; created_at: Date; audience: string | null };

const GONE = 'The peer or session was deleted before these messages were processed; nothing was stored or derived.';

/**
 * Processes an add-event: derives at most one claim (when infer is true), then in one transaction
 * stores the claim with its ADD history entry, makes the messages available, and ends the event
 * succeeded. Derived memory therefore becomes readable exactly when the event succeeds.
 */
export async function processAddEvent(em: Em, deriver: ClaimDeriver, eventId: string): Promise<{ status: string }> {
  const ev = await beginEvent(em, eventId);
  if (!ev) return { status: 'finished' };
  const messages = await sql<StoredMessage>(em, 'select id, role, content, created_at, audience from memory_message where event_id = ? order by position', [eventId]);
  if (messages.length === 0) {
    await failEvent(em, eventId, GONE);
    return { status: 'failed' };
  }
  const proposal = ev.infer ? await deriver.derive({ peer: ev.peer_label ?? 'the peer', messages }) : null;

  return em.transactional(async (tx) => {
    // The peer and session must still exist; a deletion running now waits for this transaction or wins.
    const peer = await sql(tx, 'select id from memory_peer where id = ? for share', [ev.peer_id]);
    const session = await sql(tx, 'select id from memory_session where id = ? for share', [ev.session_id]);
    if (!peer.length || !session.length) {
      await finish(tx, eventId, 'failed', null, GONE);
      return { status: 'failed' };
    }
    const outcome: Record<string, unknown> = { messages: messages.length, claim_id: null, claim_state: null };
    if (!ev.infer) outcome.note = 'infer was false: the messages were stored without deriving a claim.';
    else if (!proposal) outcome.note = 'Nothing salient to remember: no claim was derived.';
    else Object.assign(outcome, await storeClaim(tx, eventId, ev, messages, proposal));
    await sql(tx, 'update memory_message set available = true where event_id = ?', [eventId]);
    await finish(tx, eventId, 'succeeded', outcome, null);
    return { status: 'succeeded' };
  });
}

const normalized = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();

async function storeClaim(tx: Em, eventId: string, ev: Claimed, messages: StoredMessage[], p: Proposal): Promise<Record<string, unknown>> {
  const cited = messages[p.message]!;
  const hostile = p.injection !== null;
  if (!hostile) {
    // Junk control: the same statement already current for this peer is not stored twice.
    const current = await sql<{ id: string; content: string }>(
      tx,
      "select id, content from memory_claim where peer_id = ? and state = 'current' and (slot = ? or lower(content) = lower(?))",
      [ev.peer_id, p.slot ?? '', p.content],
    );
    const same = current.find((c) => normalized(c.content) === normalized(p.content));
    if (same) return { note: `Already remembered as claim ${same.id}: no duplicate was stored.`, claim_id: null, duplicate_of: same.id };
  }
  const conflicts = hostile || !p.slot
    ? []
    : (await sql<{ id: string }>(tx, "select id from memory_claim where peer_id = ? and slot = ? and state = 'current' order by created_at", [ev.peer_id, p.slot])).map((r) => r.id);
  const claimId = deterministicUuid(`memory-claim:${eventId}`);
  const head = revisionToken(claimId, 1, p.content);
  const warning = hostile ? injectionWarning(p.injection!) : null;
  const inserted = await sql<{ id: string }>(
    tx,
    `insert into memory_claim (id, account_id, peer_id, session_id, event_id, message_id, span_start, span_end, content, state,
       authority, eligibility, support_status, categories, warning, conflicts_with, agent_id, revision, head_revision, valid_from, slot, audience)
     values (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'inferred_memory', ?, ?, ?::text[], ?, ?::uuid[], ?, 1, ?, ?, ?, ?)
     on conflict (id) do nothing returning id`,
    [claimId, ev.account_id, ev.peer_id, ev.session_id, eventId, cited.id, p.start, p.end, p.content,
      hostile ? 'pending_review' : 'current', hostile ? 'not_eligible' : 'eligible', conflicts.length ? 'conflicting' : 'supported',
      p.categories, warning, conflicts, ev.agent_id, head, cited.created_at, p.slot, cited.audience],
  );
  if (inserted.length) {
    await sql(
      tx,
      `insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
         successor_revision, reason, valid_from, marker)
       values (?, 1, ?, 'ADD', null, ?, null, ?, ?, ?, ?) on conflict do nothing`,
      [claimId, ev.account_id, p.content, head, hostile ? 'derived; held for review' : 'derived from a session message', cited.created_at, historyMarker(claimId, 1, 'ADD', head)],
    );
    if (conflicts.length) {
      await sql(
        tx,
        `update memory_claim set conflicts_with = array_append(conflicts_with, ?::uuid), support_status = 'conflicting'
          where id = any(?::uuid[]) and not (?::uuid = any(conflicts_with))`,
        [claimId, conflicts, claimId],
      );
    }
  }
  return {
    claim_id: claimId,
    claim_state: hostile ? 'pending_review' : 'current',
    ...(conflicts.length ? { conflicts_with: conflicts } : {}),
    ...(warning ? { note: warning } : {}),
  };
}

/**
 * Processes a deletion: removes the peer or session row (everything derived cascades with it), scrubs
 * the label from the account's events, and ends the event succeeded, in one transaction.
 */
export async function processDeletionEvent(em: Em, eventId: string): Promise<{ status: string }> {
  const ev = await beginEvent(em, eventId);
  if (!ev) return { status: 'finished' };
  return em.transactional(async (tx) => {
    if (ev.kind === 'delete_peer') {
      await sql(tx, 'delete from memory_peer where id = ?', [ev.peer_id]);
      await sql(tx, 'update memory_event set peer_label = null where peer_id = ?', [ev.peer_id]);
    } else {
      await sql(tx, 'delete from memory_session where id = ?', [ev.session_id]);
      await sql(tx, 'update memory_event set session_label = null where session_id = ?', [ev.session_id]);
    }
    await finish(tx, eventId, 'succeeded', { note: ev.kind === 'delete_peer' ? 'The peer and its memory were deleted.' : 'The session and its messages were deleted.' }, null);
    return { status: 'succeeded' };
  });
}
