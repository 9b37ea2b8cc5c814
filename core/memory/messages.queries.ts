import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { CredentialKind, Reach } from '../auth/principal.ts';
import { WORKSPACE } from '../contracts/memory.ts';
import { bound, inAudiences, sql, type Sql } from '../../platform/db/sql.ts';
import { sha256Hex } from '../../platform/hash.ts';
import { heldSql } from '../retrieval/candidates.queries.ts';

// The message write and read statements (memory_event, memory_message, cairn_add_messages); the rules
// are in messages.ts and context.ts.

/**
 * A timestamp column as ISO 8601 text with PostgreSQL's full precision (microseconds), for cursors: a
 * JavaScript Date keeps milliseconds only, and a cursor cut to milliseconds skips the rows of the same
 * millisecond that sort after it.
 */
export const exactTime = (column: string) => `to_char(${column} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;

export type MessageRow = {
  id: string; session_label: string; peer_label: string; role: 'user' | 'assistant' | 'system' | 'tool'; content: string;
  agent_id: string | null; metadata: Record<string, unknown> | null; source_ids: string[]; event_id: string; position: number;
  created_at: Date;
  /** created_at with its microseconds, for cursors. */
  created_key: string;
  /** Held for review (retrieval/candidates.queries.ts heldSql). */
  held: boolean;
  redacted_at: Date | null; redacted_by: Redactor | null; redaction_reason: string | null;
};

/** Who redacted a message: the kind of credential, and the key or application id (the person's email in the console). */
export type Redactor = { credential: CredentialKind; id: string };

const MESSAGE_SELECT = sql.raw(`select m.id, s.label as session_label, p.label as peer_label, m.role, m.content, m.agent_id,
  m.metadata, m.source_ids, m.event_id, m.position, m.created_at, ${exactTime('m.created_at')} as created_key, ${heldSql('m')} as held,
  m.redacted_at, m.redacted_by, m.redaction_reason
  from memory_message m join memory_session s on s.id = m.session_id join memory_peer p on p.id = m.peer_id`);

/** The statuses of the given ingest jobs (url and file) of the account inside the key's audiences. */
export async function sourceJobStatuses(em: Em, reach: Reach, ids: string[]) {
  return bound<{ id: string; status: string }>(em, sql`select id, status from ingest_job
    where account_id = ${reach.accountId} and id = any(${ids}::uuid[]) and kind in ('url', 'file')${inAudiences('audience', reach.audiences)}`);
}

/** What a write's idempotency key holds: its digest, receipt and audience. */
export type HeldWrite<R> = { request_hash: string | null; receipt: R | null; audience: string | null };

export async function writeOfKey<R>(em: Em, accountId: string, idempotencyKey: string): Promise<HeldWrite<R> | undefined> {
  const [row] = await bound<HeldWrite<R>>(em,
    sql`select request_hash, receipt, audience from memory_event where account_id = ${accountId} and idempotency_key = ${idempotencyKey}`);
  return row;
}

/**
 * cairn_add_messages (platform/db/functions/cairn_add_messages.sql): one statement, one round trip, one
 * commit. It locks the labels (for share), and inserts the event and its messages only when the session,
 * the peer and every source check out; it says which did and whether the event was inserted (0: the key
 * was taken meanwhile).
 */
export async function insertWrite(em: Em, w: {
  accountId: string; sessionLabel: string; peerLabel: string; sourceIds: string[]; eventId: string; agentId: string | null; infer: boolean;
  idempotencyKey: string | null; requestHash: string; receipt: unknown; createdAt: Date | null; metadata: Record<string, unknown> | null;
  audiences: readonly string[] | null; messages: { id: string; role: string; content: string }[];
}) {
  const write = {
    account: w.accountId, workspace: WORKSPACE, session: w.sessionLabel, peer: w.peerLabel, sources: w.sourceIds, event: w.eventId,
    agent: w.agentId, infer: w.infer, idempotency_key: w.idempotencyKey, request_hash: w.requestHash, receipt: w.receipt ?? null,
    created_at: w.createdAt, metadata: w.metadata, audiences: w.audiences,
    messages: w.messages.map((m) => ({ id: m.id, role: m.role, content: m.content, hash: sha256Hex(m.content) })),
  };
  const [outcome] = await bound<{ session: boolean; peer: boolean; sources: boolean; inserted: number }>(em, sql`select r_session as session,
      r_peer as peer, r_sources as sources, r_inserted as inserted from cairn_add_messages(${JSON.stringify(write)}::jsonb)`);
  return outcome!;
}

/**
 * A session's available messages inside the key's audiences, and the redacted ones (their place in the
 * conversation, without their text), in conversation order, after a cursor's key.
 */
export async function sessionMessagesAfter(em: Em, reach: Reach, sessionId: string, page: { after: [string, string, number] | undefined; limit: number }) {
  const { after, limit } = page;
  return bound<MessageRow>(em, sql`${MESSAGE_SELECT} where m.session_id = ${sessionId} and (m.available or m.redacted_at is not null)${inAudiences('m.audience', reach.audiences)}
      ${after ? sql`and (m.created_at, m.event_id, m.position) > (${after[0]}::timestamptz, ${after[1]}::uuid, ${after[2]}::int)` : sql.empty}
    order by m.created_at, m.event_id, m.position limit ${limit}`);
}

export type MessageWhere = { audiences: Reach['audiences']; peerId?: string; sessionId?: string; includeHeld?: boolean };

/** Available messages inside the key's audiences (not held, unless asked), of the peer and/or the session when given. */
function messageFilters(where: MessageWhere): Sql {
  return sql`m.available${where.includeHeld ? sql.empty : sql.raw(` and not ${heldSql('m')}`)}${inAudiences('m.audience', where.audiences)}${where.peerId ? sql` and m.peer_id = ${where.peerId}` : sql.empty}${
    where.sessionId ? sql` and m.session_id = ${where.sessionId}` : sql.empty}`;
}

/** The latest `limit` available messages inside `where`, newest first. */
export async function latestMessages(tx: Em, where: MessageWhere, limit: number): Promise<MessageRow[]> {
  return bound<MessageRow>(tx, sql`${MESSAGE_SELECT} where ${messageFilters(where)}
    order by m.created_at desc, m.event_id desc, m.position desc limit ${limit}`);
}

/** Messages by id (no boundary: the ids come from a read that applied it). */
export async function messagesByIds(tx: Em, ids: string[]): Promise<MessageRow[]> {
  return bound<MessageRow>(tx, sql`${MESSAGE_SELECT} where m.id = any(${ids}::uuid[])`);
}

/** The sessions a peer takes part in (its available messages' and its claims'). */
export async function peerSessionIds(tx: Em, peerId: string): Promise<string[]> {
  const rows = await bound<{ id: string }>(tx, sql`select distinct session_id as id from memory_message where peer_id = ${peerId} and available
     union select session_id from memory_claim where peer_id = ${peerId} and session_id is not null`);
  return rows.map((r) => r.id);
}

// Redaction (redaction.ts) -------------------------------------------------------------------------

/** A message of the session inside the key's audiences, locked for update (redacted or not). */
export async function messageToRedact(tx: Em, reach: Reach, sessionId: string, messageId: string): Promise<MessageRow | undefined> {
  const [row] = await bound<MessageRow>(tx, sql`${MESSAGE_SELECT} where m.id = ${messageId} and m.session_id = ${sessionId}
      and m.account_id = ${reach.accountId}${inAudiences('m.audience', reach.audiences)} for update of m`);
  return row;
}

/**
 * The message without its text: content, search vector, embedding and metadata removed, no longer
 * available to any read, who redacted it, when and why kept. Changing its content makes the search
 * index copies start over (trigger memory_message_rewritten).
 */
export async function redactRow(tx: Em, id: string, r: { at: Date; by: Redactor; reason: string }): Promise<void> {
  await bound(tx, sql`update memory_message set content = '', tsv = ''::tsvector, content_hash = ${sha256Hex('')}, embedding = null,
      embedding_model = null, metadata = null, available = false, redacted_at = ${r.at}, redacted_by = ${JSON.stringify(r.by)}::jsonb,
      redaction_reason = ${r.reason}
    where id = ${id}`);
}
