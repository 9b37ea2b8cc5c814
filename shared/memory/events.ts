import { randomUUID } from 'node:crypto';
import type { Reach } from '../auth/principal.ts';
import { EVENT_STATUSES } from '../contracts/memory.ts';
import { notifyCoalesced } from '../db/connections.ts';
import { audienceCondition, bound } from '../db/sql.ts';
import { forbidden, notFound } from '../errors.ts';
import { iso } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { requireLabel, type LabelKind } from './labels.ts';

export type EventKind = 'add_messages' | 'delete_peer' | 'delete_session';

/** A begun event: what processing needs of its row. */
export type Claimed = {
  id: string; account_id: string; kind: EventKind; status: string; peer_id: string | null; session_id: string | null;
  peer_label: string | null; infer: boolean; agent_id: string | null; created_at: Date;
};

/** A message of a begun add-event, as processing reads it. */
export type StoredMessage = { id: string; role: 'user' | 'assistant' | 'system' | 'tool'; content: string; created_at: Date; audience: string | null };
export type EventRow = {
  id: string;
  kind: EventKind;
  status: (typeof EVENT_STATUSES)[number];
  created_at: Date;
  started_at: Date | null;
  completed_at: Date | null;
  failure: { message: string } | null;
  outcome: Record<string, unknown> | null;
};

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

const EVENT_COLUMNS = 'id, kind, status, created_at, started_at, completed_at, failure, outcome';

/**
 * One event of the account; another account's event, or one outside the key's audiences (an event
 * carries the audience of the peer or session it is about), is indistinguishable from a missing one.
 */
export async function getEvent(em: Em, reach: Reach, eventId: string): Promise<EventRow> {
  const inReach = audienceCondition('audience', reach.audiences);
  const [row] = isUuid(eventId)
    ? await bound<EventRow>(em, `select ${EVENT_COLUMNS} from memory_event where id = ? and account_id = ?${inReach.sql}`, [eventId, reach.accountId, ...inReach.params])
    : [];
  if (!row) throw notFound('No memory event with this id.');
  return row;
}

/** Event counts by status for what the credential reaches, and the age of the oldest unfinished one. */
export async function queueStatus(em: Em, reach: Reach) {
  const inReach = audienceCondition('audience', reach.audiences);
  const rows = await bound<{ status: string; n: number; oldest: Date | null }>(
    em,
    `select status, count(*)::int as n,
            min(created_at) filter (where status in ('queued', 'running')) as oldest
       from memory_event where account_id = ?${inReach.sql} group by status`,
    [reach.accountId, ...inReach.params],
  );
  const counts = Object.fromEntries(EVENT_STATUSES.map((s) => [s, 0])) as Record<(typeof EVENT_STATUSES)[number], number>;
  let oldest: Date | null = null;
  for (const r of rows) {
    counts[r.status as keyof typeof counts] = r.n;
    if (r.oldest && (!oldest || r.oldest < oldest)) oldest = r.oldest;
  }
  return { schemaVersion: 'service-memory-queue-status-v1' as const, workspace: 'default' as const, counts, oldest_unfinished_at: iso(oldest) };
}

/** The channel the workers' dispatchers (shared/memory/dispatcher.ts) listen on for queued events. */
export const MEMORY_EVENT_CHANNEL = 'cairn_memory_event';

/**
 * Wakes the dispatchers after a queued event has committed (shared/db/connections.ts notifyCoalesced).
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
  const eventKind: EventKind = kind === 'peer' ? 'delete_peer' : 'delete_session';
  const column = kind === 'peer' ? 'peer_id' : 'session_id';
  const result = await em.transactional(async (tx) => {
    const target = await requireLabel(tx, reach, kind, label, true);
    if (reach.audiences) {
      // Claims carry the audience of the message they cite, so the messages decide.
      const [outside] = await bound(
        tx,
        `select 1 from memory_message where ${column} = ? and (audience is null or not audience = any(?::text[])) limit 1`,
        [target.id, [...reach.audiences]],
      );
      if (outside) {
        throw forbidden(`The ${kind} "${label.slice(0, 80)}" holds memory outside this API key's audiences; a key that reaches it all must delete it.`);
      }
    }
    const [pending] = await bound<{ id: string }>(
      tx,
      `select id from memory_event where account_id = ? and kind = ? and ${column} = ? and status in ('queued', 'running') limit 1`,
      [accountId, eventKind, target.id],
    );
    if (pending) return pending.id;
    const id = randomUUID();
    await bound(
      tx,
      `insert into memory_event (id, account_id, kind, status, ${column}, ${kind}_label, audience) values (?, ?, ?, 'queued', ?, ?, ?)`,
      [id, accountId, eventKind, target.id, label, target.audience],
    );
    return id;
  });
  notifyQueued(em);
  return getEvent(em.fork(), reach, result);
}
