import { randomUUID } from 'node:crypto';
import type { Reach } from '../auth/principal.ts';
import type { MessagesCreateRequest } from '../contracts/memory.ts';
import { AppError, validationError } from '../../platform/errors.ts';
import { assertSameRequest, operationInProgress, requestHash as digestOf } from '../idempotency.ts';
import { decodeCursor, iso, page } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { notifyQueued } from './events.ts';
import { requireLabel } from './labels.ts';
import { insertWrite, sessionMessagesAfter, sourceJobStatuses, writeOfKey, type HeldWrite, type MessageRow } from './messages.queries.ts';

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
  const rows = await sourceJobStatuses(em, reach, ids);
  const found = new Map(rows.map((r) => [r.id, r.status]));
  for (const id of ids) {
    const status = found.get(id);
    if (!status) throw validationError(`source_ids: ${id} is not an ingest job of this account.`);
    if (status !== 'succeeded') throw validationError(`source_ids: ingest job ${id} is ${status}, not succeeded.`);
  }
}

type Existing = HeldWrite<Receipt>;

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
    return writeOfKey(em, accountId, idem);
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
  const outcome = await insertWrite(em, {
    accountId, sessionLabel, peerLabel: body.peer_id, sourceIds, eventId, agentId: body.agent_id ?? null, infer: body.infer,
    idempotencyKey: idem ?? null, requestHash, receipt, createdAt, metadata: body.metadata ?? null, audiences: reach.audiences,
    messages: body.messages.map((m, i) => ({ id: messageIds[i]!, role: m.role, content: m.content })),
  });
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
    held: m.held,
    redacted: m.redacted_at ? { at: iso(m.redacted_at)!, by: m.redacted_by!, reason: m.redaction_reason ?? '' } : null,
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
  const rows = await sessionMessagesAfter(em, reach, session.id, { after, limit: p.limit + 1 });
  return page(rows, p.limit, (m) => [m.created_key, m.event_id, m.position], messageItem);
}
