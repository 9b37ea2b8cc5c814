import { randomUUID } from 'node:crypto';
import type { Reach } from '../auth/principal.ts';
import { EVENT_STATUSES } from '../contracts/memory.ts';
import { notifyCoalesced } from '../../platform/db/connections.ts';
import { forbidden, notFound } from '../../platform/errors.ts';
import { iso } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { requireLabel, type LabelKind } from './labels.ts';
import { eventCounts, eventInReach, holdsMemoryOutside, insertDeletionEvent, pendingDeletion, type EventRow } from './events.queries.ts';

export type { Claimed, EventKind, EventRow, StoredMessage } from './events.queries.ts';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const isUuid = (s: string) => UUID.test(s);

export function eventStatus(e: EventRow) {
  return {
    schemaVersion: 'service-memory-event-v1' as const,
    event_id: e.id,
    status: e.status,
    kind: e.kind,
    created_at: iso(e.created_at)!,
    started_at: iso(e.started_at),
    completed_at: iso(e.completed_at),
    failure: e.failure ? { message: e.failure.message } : null,
    outcome: e.outcome,
  };
}

/**
 * One event of the account; another account's event, or one outside the key's audiences (an event
 * carries the audience of the peer or session it is about), is indistinguishable from a missing one.
 */
export async function getEvent(em: Em, reach: Reach, eventId: string): Promise<EventRow> {
  const row = isUuid(eventId) ? await eventInReach(em, reach, eventId) : undefined;
  if (!row) throw notFound('No memory event with this id.');
  return row;
}

/** Event counts by status for what the credential reaches, and the age of the oldest unfinished one. */
export async function queueStatus(em: Em, reach: Reach) {
  const rows = await eventCounts(em, reach);
  const counts = Object.fromEntries(EVENT_STATUSES.map((s) => [s, 0])) as Record<(typeof EVENT_STATUSES)[number], number>;
  let oldest: Date | null = null;
  for (const r of rows) {
    counts[r.status as keyof typeof counts] = r.n;
    if (r.oldest && (!oldest || r.oldest < oldest)) oldest = r.oldest;
  }
  return { schemaVersion: 'service-memory-queue-status-v1' as const, workspace: 'default' as const, counts, oldest_unfinished_at: iso(oldest) };
}

/** The channel the workers' dispatchers (core/memory/dispatcher.ts) listen on for queued events. */
export const MEMORY_EVENT_CHANNEL = 'cairn_memory_event';

/**
 * Wakes the dispatchers after a queued event has committed (platform/db/connections.ts notifyCoalesced).
 * The event row is the outbox: a lost notification (an error, a crash right after the commit) only
 * delays the event to a dispatcher's next poll.
 */
export function notifyQueued(em: Em): void {
  notifyCoalesced(em, MEMORY_EVENT_CHANNEL);
}

/**
 * Requests the asynchronous deletion of a peer or session. While one deletion of the same thing is
 * queued or running, asking again returns that event instead of making another. An audience-limited
 * key may delete only what lies wholly inside its audiences: a session holding messages of another
 * audience's peer is refused (403), nothing changed.
 */
export async function requestDeletion(em: Em, reach: Reach, kind: LabelKind, label: string) {
  const accountId = reach.accountId;
  const result = await em.transactional(async (tx) => {
    const target = await requireLabel(tx, reach, kind, { label, lock: true });
    if (reach.audiences) {
      // Claims carry the audience of the message they cite, so the messages decide.
      if (await holdsMemoryOutside(tx, kind, target.id, reach.audiences)) {
        throw forbidden(`The ${kind} "${label.slice(0, 80)}" holds memory outside this API key's audiences; a key that reaches it all must delete it.`);
      }
    }
    const pending = await pendingDeletion(tx, accountId, kind, target.id);
    if (pending) return pending;
    const id = randomUUID();
    await insertDeletionEvent(tx, { id, accountId, kind, targetId: target.id, label, audience: target.audience });
    return id;
  });
  notifyQueued(em);
  return getEvent(em.fork(), reach, result);
}
