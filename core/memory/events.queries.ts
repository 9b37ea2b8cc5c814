import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import type { EVENT_STATUSES } from '../contracts/memory.ts';
import { bound, inAudiences, sql } from '../../platform/db/sql.ts';

// The memory event queue's statements (memory_event, memory_message): the API's reads and deletion
// requests (events.ts), the dispatcher's claims, a batch's begin and end, its messages, deletions
// (dispatcher.ts, batch.ts, event-steps.ts), the add-events' commit (commit.ts). The decisions are in
// those files.

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


/**
 * Claims up to `limit` queued events nobody is processing, oldest first, for a new batch: events never
 * dispatched, and events whose dispatch went stale (the dispatcher died before the start, or the batch
 * never began them). SKIP LOCKED lets several workers' dispatchers claim at once without waiting.
 */
export async function claimBatch(em: Em, batchId: string, limit: number, staleMs: number): Promise<string[]> {
  const rows = await bound<{ id: string }>(
    em,
    sql`with picked as (
       select id, created_at from memory_event
        where status = 'queued' and (batch_id is null or dispatched_at < now() - make_interval(secs => ${staleMs / 1000}))
        order by created_at, id limit ${limit} for update skip locked),
     claimed as (
       update memory_event e set batch_id = ${batchId}, dispatched_at = now() from picked where e.id = picked.id
       returning e.id, picked.created_at)
     select id from claimed order by created_at, id`,
  );
  return rows.map((r) => r.id);
}

const CLAIMED = sql.raw('id, account_id, kind, status, peer_id, session_id, peer_label, infer, agent_id, created_at');

/**
 * Marks the batch's unfinished events running and returns them oldest first. An event another batch
 * has taken over since (its dispatch went stale and it was dispatched again) is not this batch's.
 */
export async function beginBatch(em: Em, batchId: string, eventIds: string[]): Promise<Claimed[]> {
  return bound<Claimed>(em, sql`with begun as (
       update memory_event set status = 'running', started_at = coalesce(started_at, now())
        where id = any(${eventIds}::uuid[]) and batch_id = ${batchId} and status in ('queued', 'running')
        returning ${CLAIMED})
     select * from begun order by created_at, id`);
}

export async function finishEvents(tx: Em, eventIds: string[], end: { status: 'succeeded' | 'failed'; outcome: Record<string, unknown> | null; failure: string | null }) {
  const { status, outcome, failure } = end;
  await bound(
    tx,
    sql`update memory_event set status = ${status}, completed_at = now(), outcome = ${outcome ? JSON.stringify(outcome) : null}::jsonb, failure = ${failure ? JSON.stringify({ message: failure }) : null}::jsonb
      where id = any(${eventIds}::uuid[]) and status in ('queued', 'running')`,
  );
}

/** How an event ended, as the batch commit writes it. */
export type EventEnd = { id: string; status: 'succeeded' | 'failed'; outcome: Record<string, unknown> | null; failure: { message: string } | null };

/** Ends events, each with its own status, outcome and failure, in one statement (an event already ended is kept). */
export async function endEvents(tx: Em, ends: EventEnd[]): Promise<void> {
  await bound(
    tx,
    sql`update memory_event e set status = u.status, completed_at = now(), outcome = u.outcome, failure = u.failure
         from jsonb_to_recordset(${JSON.stringify(ends)}::jsonb) as u(id uuid, status text, outcome jsonb, failure jsonb)
        where e.id = u.id and e.status in ('queued', 'running')`,
  );
}

/** Makes the events' messages available: readable, and searchable without vectors. */
export async function makeAvailable(tx: Em, eventIds: string[]): Promise<void> {
  await bound(tx, sql`update memory_message set available = true where event_id = any(${eventIds}::uuid[])`);
}

/** Makes messages available with their vectors (hex; null: stored without one) made by `model`. */
export async function makeAvailableWithVectors(tx: Em, model: string, messageIds: string[], vectors: (string | null)[]): Promise<void> {
  await bound(
    tx,
    sql`update memory_message m set available = true, embedding = decode(v.vector, 'hex'), embedding_model = case when v.vector is null then null else ${model} end
           from unnest(${messageIds}::uuid[], ${vectors}::text[]) v(id, vector) where m.id = v.id`,
  );
}

/** The stored messages of add-events, by event, in write order. */
export async function loadMessages(em: Em, eventIds: string[]): Promise<Map<string, StoredMessage[]>> {
  const rows = await bound<StoredMessage & { event_id: string }>(
    em,
    sql`select event_id, id, role, content, created_at, audience from memory_message where event_id = any(${eventIds}::uuid[]) order by event_id, position`,
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
  await bound(tx, sql`delete from memory_peer where id = ${peerId}`);
  await bound(tx, sql`update memory_event set peer_label = null where peer_id = ${peerId}`);
}

/** Removes a session (its messages cascade) and scrubs its label from the account's events. */
export async function deleteSession(tx: Em, sessionId: string): Promise<void> {
  await bound(tx, sql`delete from memory_session where id = ${sessionId}`);
  await bound(tx, sql`update memory_event set session_label = null where session_id = ${sessionId}`);
}

const EVENT_COLUMNS = sql.raw('id, kind, status, created_at, started_at, completed_at, failure, outcome');

export async function eventInReach(em: Em, reach: Reach, eventId: string): Promise<EventRow | undefined> {
  const [row] = await bound<EventRow>(em, sql`select ${EVENT_COLUMNS} from memory_event
    where id = ${eventId} and account_id = ${reach.accountId}${inAudiences('audience', reach.audiences)}`);
  return row;
}

/** Events by status within reach, and the oldest unfinished one's creation time per status. */
export async function eventCounts(em: Em, reach: Reach) {
  return bound<{ status: string; n: number; oldest: Date | null }>(em, sql`select status, count(*)::int as n,
      min(created_at) filter (where status in ('queued', 'running')) as oldest
    from memory_event where account_id = ${reach.accountId}${inAudiences('audience', reach.audiences)} group by status`);
}

const TARGET = { peer: sql.raw('peer_id'), session: sql.raw('session_id') } as const;

/** Whether a peer or session holds messages outside these audiences (claims carry their message's audience). */
export async function holdsMemoryOutside(tx: Em, kind: 'peer' | 'session', id: string, audiences: readonly string[]): Promise<boolean> {
  const rows = await bound(tx, sql`select 1 from memory_message
    where ${TARGET[kind]} = ${id} and (audience is null or not audience = any(${[...audiences]}::text[])) limit 1`);
  return rows.length > 0;
}

/** The queued or running deletion event of a peer or session, if any. */
export async function pendingDeletion(tx: Em, accountId: string, kind: 'peer' | 'session', id: string): Promise<string | null> {
  const [row] = await bound<{ id: string }>(tx, sql`select id from memory_event
    where account_id = ${accountId} and kind = ${kind === 'peer' ? 'delete_peer' : 'delete_session'} and ${TARGET[kind]} = ${id}
      and status in ('queued', 'running') limit 1`);
  return row?.id ?? null;
}

export async function insertDeletionEvent(tx: Em, e: { id: string; accountId: string; kind: 'peer' | 'session'; targetId: string; label: string; audience: string | null }): Promise<void> {
  await bound(tx, sql`insert into memory_event (id, account_id, kind, status, ${TARGET[e.kind]}, ${sql.raw(`${e.kind}_label`)}, audience)
    values (${e.id}, ${e.accountId}, ${e.kind === 'peer' ? 'delete_peer' : 'delete_session'}, 'queued', ${e.targetId}, ${e.label}, ${e.audience})`);
}

/**
 * An event and the batch that last took it, for operators (`admin memory event`): the batch's workflow
 * in the Temporal UI is `memory-batch-<batch_id>`. Undefined when there is no such event.
 */
export async function eventBatch(em: Em, eventId: string) {
  const [row] = await bound<{ id: string; account_id: string; kind: EventKind; status: string; batch_id: string | null; dispatched_at: Date | null }>(
    em, sql`select id, account_id, kind, status, batch_id, dispatched_at from memory_event where id = ${eventId}`);
  return row;
}
