import { randomUUID } from 'node:crypto';
import type { Client } from '@temporalio/client';
import { EVENT_STATUSES } from '../contracts/memory.ts';
import { notFound } from '../errors.ts';
import type { TemporalClientHandle } from '../temporal/client.ts';
import { startMemoryEvent } from '../temporal/workflows.ts';
import { iso, sql, type Em } from './db.ts';
import { requireLabel, type LabelKind } from './labels.ts';

/**
 * What a memory operation that starts an event needs: its EntityManager, the Temporal client, and where
 * to run the start nobody waits for (the client handle's detach, so shutdown can cancel it).
 */
export type MemoryDeps = {
  em: Em;
  temporal: Client;
  taskQueue: string;
  detach: (work: () => Promise<unknown>) => void;
  log?: { warn(obj: object, msg: string): void };
};

/** The dependencies of one request's memory operations (REST route or MCP tool). */
export function memoryDepsOf(em: Em, temporal: TemporalClientHandle, taskQueue: string, log: MemoryDeps['log']): MemoryDeps {
  return { em, temporal: temporal.client, taskQueue, detach: temporal.detach, log };
}

export type EventKind = 'add_messages' | 'delete_peer' | 'delete_session';
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

/** One event of the account; another account's event is indistinguishable from a missing one. */
export async function getEvent(em: Em, accountId: string, eventId: string): Promise<EventRow> {
  const [row] = isUuid(eventId)
    ? await sql<EventRow>(em, `select ${EVENT_COLUMNS} from memory_event where id = ? and account_id = ?`, [eventId, accountId])
    : [];
  if (!row) throw notFound('No memory event with this id.');
  return row;
}

/** Event counts by status for the account, and the age of the oldest unfinished one. */
export async function queueStatus(em: Em, accountId: string) {
  const rows = await sql<{ status: string; n: number; oldest: Date | null }>(
    em,
    `select status, count(*)::int as n,
            min(created_at) filter (where status in ('queued', 'running')) as oldest
       from memory_event where account_id = ? group by status`,
    [accountId],
  );
  const counts = Object.fromEntries(EVENT_STATUSES.map((s) => [s, 0])) as Record<(typeof EVENT_STATUSES)[number], number>;
  let oldest: Date | null = null;
  for (const r of rows) {
    counts[r.status as keyof typeof counts] = r.n;
    if (r.oldest && (!oldest || r.oldest < oldest)) oldest = r.oldest;
  }
  return { schemaVersion: 'service-memory-queue-status-v1' as const, workspace: 'default' as const, counts, oldest_unfinished_at: iso(oldest) };
}

/**
 * Starts an event's workflow without holding up the caller (transactional outbox): the event row is
 * already committed, so the receipt does not wait for the Temporal round trip. A start that fails
 * (Temporal unreachable, process killed) leaves the event `queued`, and the worker's sweeper starts it
 * later (sweepQueuedEvents); starts are idempotent (one workflow id per event).
 */
export function dispatchEvent(deps: MemoryDeps, eventId: string): void {
  deps.detach(() => startMemoryEvent(deps.temporal, deps.taskQueue, eventId).catch((err: unknown) => {
    deps.log?.warn({ err, eventId }, 'memory event start failed; the sweeper will start it');
  }));
}

/** Starts the workflows of events still `queued` after `olderThanMs` (their first start was lost). */
export async function sweepQueuedEvents(deps: Pick<MemoryDeps, 'em' | 'temporal' | 'taskQueue'>, olderThanMs: number, limit = 500): Promise<number> {
  const rows = await sql<{ id: string }>(
    deps.em,
    `select id from memory_event where status = 'queued' and created_at < now() - make_interval(secs => ?) order by created_at limit ?`,
    [olderThanMs / 1000, limit],
  );
  for (const r of rows) await startMemoryEvent(deps.temporal, deps.taskQueue, r.id);
  return rows.length;
}

/**
 * Requests the asynchronous deletion of a peer or session. While one deletion of the same thing is
 * queued or running, asking again returns that event instead of making another.
 */
export async function requestDeletion(deps: MemoryDeps, accountId: string, kind: LabelKind, label: string) {
  const eventKind: EventKind = kind === 'peer' ? 'delete_peer' : 'delete_session';
  const column = kind === 'peer' ? 'peer_id' : 'session_id';
  const result = await deps.em.transactional(async (tx) => {
    const target = await requireLabel(tx, accountId, kind, label, true);
    const [pending] = await sql<{ id: string }>(
      tx,
      `select id from memory_event where account_id = ? and kind = ? and ${column} = ? and status in ('queued', 'running') limit 1`,
      [accountId, eventKind, target.id],
    );
    if (pending) return pending.id;
    const id = randomUUID();
    await sql(
      tx,
      `insert into memory_event (id, account_id, kind, status, ${column}, ${kind}_label) values (?, ?, ?, 'queued', ?, ?)`,
      [id, accountId, eventKind, target.id, label],
    );
    return id;
  });
  dispatchEvent(deps, result);
  return getEvent(deps.em.fork(), accountId, result);
}
