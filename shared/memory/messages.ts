import { randomUUID } from 'node:crypto';
import type { Reach } from '../auth/principal.ts';
import { WORKSPACE, type MessagesCreateRequest } from '../contracts/memory.ts';
import { audienceCondition, bound } from '../db/sql.ts';
import { AppError, validationError } from '../errors.ts';
import { sha256Hex } from '../hash.ts';
import { assertSameRequest, operationInProgress, requestHash as digestOf } from '../idempotency.ts';
import { decodeCursor, exactTime, iso, page } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { notifyQueued } from './events.ts';
import { requireLabel } from './labels.ts';

export type Receipt = {
  schemaVersion: 'service-memory-messages-receipt-v1';
  event_id: string;
  status: 'processing';
  results: { message_id: string; position: number; role: MessagesCreateRequest['messages'][number]['role'] }[];
  authority: 'session_message';
  eligibility: 'pending';
};

/** Every source id must be a succeeded ingest job (url or file) of this account, inside the key's audiences. */
async function assertSources(em: Em, reach: Reach, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  const inReach = audienceCondition('audience', reach.audiences);
  const rows = await bound<{ id: string; status: string }>(
    em,
    `select id, status from ingest_job where account_id = ? and id = any(?::uuid[]) and kind in ('url', 'file')${inReach.sql}`,
    [reach.accountId, ids, ...inReach.params],
  );
  const found = new Map(rows.map((r) => [r.id, r.status]));
  for (const id of ids) {
    const status = found.get(id);
    if (!status) throw validationError(`source_ids: ${id} is not an ingest job of this account.`);
    if (status !== 'succeeded') throw validationError(`source_ids: ingest job ${id} is ${status}, not succeeded.`);
  }
}

type Existing = { request_hash: string | null; receipt: Receipt | null; audience: string | null };

function replay(existing: Existing, requestHash: string, reach: Reach): Receipt {
  // An event without a receipt (a deletion's) was not made by a write: any write with its key conflicts.
  assertSameRequest({ requestHash: existing.receipt ? existing.request_hash : null, audience: existing.audience }, requestHash, reach,
    'This idempotency_key was used for a different write.');
  return existing.receipt!;
}

/**
 * Stores the messages of one write and queues its add-event (spec 4.5 "Message write rules"). Every
 * check runs before anything is written, and the event and messages are written in one transaction:
 * a rejected write leaves no event, message or claim behind. A replay with the same idempotency_key
 * returns the first receipt and writes nothing. The session, the peer and the sources must be inside
 * the key's audiences; the event, the messages and the claim derived from them carry the peer's
 * audience, so what is remembered about a peer stays in the peer's audience whoever writes it.
 */
export async function addMessages(em: Em, reach: Reach, sessionLabel: string, body: MessagesCreateRequest): Promise<Receipt> {
  const accountId = reach.accountId;
  const sourceIds = [...new Set(body.source_ids ?? [])];
  const createdAt = body.created_at ? new Date(body.created_at) : null;
  const requestHash = digestOf([sessionLabel, body.peer_id, body.messages, body.agent_id ?? null, body.infer,
    createdAt?.toISOString() ?? null, body.metadata ?? null, sourceIds]);
  const idem = body.idempotency_key;
  const findExisting = async (em: Em): Promise<Existing | undefined> => {
    if (idem === undefined) return undefined;
    const [row] = await bound<Existing>(
      em, 'select request_hash, receipt, audience from memory_event where account_id = ? and idempotency_key = ?', [accountId, idem],
    );
    return row;
  };

  const early = await findExisting(em);
  if (early) return replay(early, requestHash, reach);

  const eventId = randomUUID();
  const messageIds = body.messages.map(() => randomUUID());
  const receipt: Receipt = {
    schemaVersion: 'service-memory-messages-receipt-v1',
    event_id: eventId,
    status: 'processing',
    results: body.messages.map((m, i) => ({ message_id: messageIds[i]!, position: i, role: m.role })),
    authority: 'session_message',
    eligibility: 'pending',
  };
  // One statement, one round trip, one commit: the labels are locked (FOR SHARE) so a deletion cannot
  // remove them before this write commits, and the event and its messages are inserted only when the
  // session, the peer and every source check out. Which check failed is worked out afterwards, on the
  // (rare) failure path only. Once it has committed, the workers' dispatchers are woken (events.ts).
  const [outcome] = await bound<{ session: boolean; peer: boolean; sources: boolean; inserted: number }>(
    em,
    `select r_session as session, r_peer as peer, r_sources as sources, r_inserted as inserted
       from cairn_add_messages(?, ?, ?, ?, ?::uuid[], ?, ?, ?, ?, ?, ?::jsonb, ?::timestamptz, ?::jsonb, ?::text[], ?::uuid[], ?::integer[], ?::text[], ?::text[], ?::text[])`,
    [accountId, WORKSPACE, sessionLabel, body.peer_id, sourceIds, eventId, body.agent_id ?? null, body.infer, idem ?? null, requestHash,
      JSON.stringify(receipt), createdAt, body.metadata ? JSON.stringify(body.metadata) : null, reach.audiences ? [...reach.audiences] : null,
      messageIds, body.messages.map((_, i) => i), body.messages.map((m) => m.role), body.messages.map((m) => m.content),
      body.messages.map((m) => sha256Hex(m.content))],
  );
  if (!outcome!.session || !outcome!.peer || !outcome!.sources) {
    await requireLabel(em, reach, 'session', sessionLabel);
    if (!outcome!.peer) throw new AppError(404, 'not_found', `No peer "${body.peer_id.slice(0, 80)}" in this workspace; create it first.`);
    await assertSources(em, reach, sourceIds);
    // Only when a label or source appeared between the write and these reads.
    throw operationInProgress('The session, peer or sources changed during the write; retry.');
  }
  const inserted = outcome!.inserted === 1;
  if (inserted) notifyQueued(em);
  if (!inserted) {
    const existing = await findExisting(em.fork());
    if (!existing) throw operationInProgress('A write with this idempotency_key is in progress; retry.');
    return replay(existing, requestHash, reach);
  }
  return receipt;
}

export type MessageRow = {
  id: string; session_label: string; peer_label: string; role: Receipt['results'][number]['role']; content: string;
  agent_id: string | null; metadata: Record<string, unknown> | null; source_ids: string[]; event_id: string; position: number;
  created_at: Date;
  /** created_at with its microseconds, for cursors. */
  created_key: string;
};

export const MESSAGE_SELECT = `select m.id, s.label as session_label, p.label as peer_label, m.role, m.content, m.agent_id,
  m.metadata, m.source_ids, m.event_id, m.position, m.created_at, ${exactTime('m.created_at')} as created_key
  from memory_message m join memory_session s on s.id = m.session_id join memory_peer p on p.id = m.peer_id`;

export function messageItem(m: MessageRow) {
  return {
    id: m.id,
    session_id: m.session_label,
    peer_id: m.peer_label,
    role: m.role,
    content: m.content,
    agent_id: m.agent_id,
    metadata: m.metadata,
    source_ids: m.source_ids ?? [],
    event_id: m.event_id,
    position: m.position,
    created_at: iso(m.created_at)!,
  };
}

/**
 * The session's messages in conversation order. Only messages whose add-event has succeeded are
 * listed (available), the same rule retrieval uses, and for an audience-limited key only those of its
 * audiences (a session may hold messages about peers of several audiences).
 */
export async function listMessages(em: Em, reach: Reach, sessionLabel: string, p: { limit: number; cursor?: string }) {
  const session = await requireLabel(em, reach, 'session', sessionLabel);
  const after = decodeCursor(p.cursor, 3) as [string, string, number] | undefined;
  const inReach = audienceCondition('m.audience', reach.audiences);
  const rows = await bound<MessageRow>(
    em,
    `${MESSAGE_SELECT} where m.session_id = ? and m.available${inReach.sql}
       ${after ? 'and (m.created_at, m.event_id, m.position) > (?::timestamptz, ?::uuid, ?::int)' : ''}
     order by m.created_at, m.event_id, m.position limit ?`,
    [session.id, ...inReach.params, ...(after ?? []), p.limit + 1],
  );
  return page(rows, p.limit, (m) => [m.created_key, m.event_id, m.position], messageItem);
}
