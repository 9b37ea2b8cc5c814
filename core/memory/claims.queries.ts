import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import type { Claim } from '../contracts/memory.ts';
import { bound, inAudiences, sql } from '../../platform/db/sql.ts';
import { exactTime } from './messages.queries.ts';

// The claim statements (memory_claim, memory_claim_history): reads by id, page, rank and peer, the
// guarded changes and their history, and the batch commit's inserts. The rules are in claims.ts and
// commit.ts.

export type ClaimRow = {
  id: string; content: string; peer_label: string; session_label: string | null; agent_id: string | null;
  authority: Claim['authority']; state: Claim['state']; eligibility: Claim['eligibility']; support_status: Claim['support_status'];
  categories: string[]; valid_from: Date; valid_to: Date | null; message_id: string | null; span_start: number | null;
  span_end: number | null; message_content: string | null; conflicts_with: string[]; warning: string | null;
  head_revision: string; revision: number; created_at: Date; updated_at: Date; peer_id: string; score?: number;
  /** created_at with its microseconds, for cursors. */
  created_key: string;
  /** The latest correction (UPDATE) of a corrected claim: what it cites instead of the message. */
  corrected_revision: string | null; corrected_marker: string | null; corrected_reason: string | null; corrected_at: Date | null;
  /** The message it was derived from was redacted: nothing of it is cited any more. */
  message_redacted: boolean;
};

/**
 * A claim with its conflicts both ways: conflicts_with holds the claims it contradicted when it was
 * made, and `later` the claims made since that contradict it (they list it). A claim
 * is conflicting while either side is non-empty, unless a person has asserted it. A corrected claim
 * also brings its latest correction (`corr`), which is what it cites.
 */
const CLAIM_COLUMNS = `c.id, c.content, p.label as peer_label, s.label as session_label, c.agent_id, c.authority,
  c.state, c.eligibility,
  case when c.support_status = 'supported' and cardinality(later.ids) > 0 then 'conflicting' else c.support_status end as support_status,
  c.categories, c.valid_from, c.valid_to, c.message_id, c.span_start, c.span_end,
  m.content as message_content, m.redacted_at is not null as message_redacted, c.conflicts_with || later.ids as conflicts_with, c.warning, c.head_revision, c.revision, c.created_at,
  c.updated_at, c.peer_id, corr.successor_revision as corrected_revision, corr.marker as corrected_marker,
  corr.reason as corrected_reason, corr.created_at as corrected_at, ${exactTime('c.created_at')} as created_key`;
const CLAIM_FROM = `from memory_claim c join memory_peer p on p.id = c.peer_id
  cross join lateral (select coalesce(array_agg(o.id order by o.created_at, o.id), '{}') as ids from memory_claim o
                       where o.conflicts_with @> array[c.id] and o.peer_id = c.peer_id and not (o.id = any(c.conflicts_with))) later
  left join lateral (select h.successor_revision, h.marker, h.reason, h.created_at from memory_claim_history h
                      where h.claim_id = c.id and h.event = 'UPDATE' and c.authority = 'correction_memory'
                      order by h.seq desc limit 1) corr on true
  left join memory_session s on s.id = c.session_id left join memory_message m on m.id = c.message_id`;
const CLAIM_SELECT = sql.raw(`select ${CLAIM_COLUMNS} ${CLAIM_FROM}`);

/** A claim of the account inside the key's audiences (a claim carries its message's audience); `lock`: for update. */
export async function claimInReach(em: Em, reach: Reach, claimId: string, lock: boolean): Promise<ClaimRow | undefined> {
  const [row] = await bound<ClaimRow>(em, sql`${CLAIM_SELECT} where c.id = ${claimId} and c.account_id = ${reach.accountId}${
    inAudiences('c.audience', reach.audiences)}${lock ? sql` for update of c` : sql.empty}`);
  return row;
}

/** Every claim of the account that cites the message (derived from it), locked for update, oldest first. */
export async function claimsCiting(tx: Em, accountId: string, messageId: string): Promise<ClaimRow[]> {
  return bound<ClaimRow>(tx, sql`${CLAIM_SELECT} where c.message_id = ${messageId} and c.account_id = ${accountId}
    order by c.created_at, c.id for update of c`);
}

/**
 * Removes the text a redacted message gave its claims: the content of the claims never corrected, and
 * in every claim's history the version derived from it (the ADD entry's successor, the prior of the
 * entry that ended it). A person's corrections stay.
 */
export async function scrubDerivedText(tx: Em, claimIds: string[]): Promise<void> {
  if (!claimIds.length) return;
  await bound(tx, sql`update memory_claim set content = '' where id = any(${claimIds}::uuid[]) and authority <> 'correction_memory'`);
  await bound(tx, sql`update memory_claim_history set successor_content = case when seq = 1 then '' else successor_content end,
      prior_content = case when seq = 2 then '' else prior_content end
    where claim_id = any(${claimIds}::uuid[]) and seq <= 2`);
}

/** Claims of the account in a state inside the key's audiences, newest first, after a cursor's key. */
export async function claimsAfter(em: Em, reach: Reach, f: {
  state: Claim['state']; peerId?: string; sessionId?: string; after?: [string, string]; limit: number;
}): Promise<ClaimRow[]> {
  return bound<ClaimRow>(em, sql`${CLAIM_SELECT} where c.account_id = ${reach.accountId} and c.state = ${f.state}${
    inAudiences('c.audience', reach.audiences)}${f.peerId !== undefined ? sql` and c.peer_id = ${f.peerId}` : sql.empty}${
    f.sessionId !== undefined ? sql` and c.session_id = ${f.sessionId}` : sql.empty}${
    f.after ? sql` and (c.created_at, c.id) < (${f.after[0]}::timestamptz, ${f.after[1]}::uuid)` : sql.empty}
    order by c.created_at desc, c.id desc limit ${f.limit}`);
}

/** Claims by id (no boundary: the ids come from a read that applied it). */
export async function claimsByIds(em: Em, ids: string[]): Promise<ClaimRow[]> {
  return bound<ClaimRow>(em, sql`${CLAIM_SELECT} where c.id = any(${ids}::uuid[])`);
}

/**
 * A tsquery matching any of the query's words (letters and digits only, so nothing in the text can
 * change the query's syntax); null when there are none.
 */
export function anyWordQuery(text: string): string | null {
  const words = [...new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 2))].slice(0, 32);
  return words.length ? words.join(' | ') : null;
}

const ELIGIBLE = sql.raw("and c.eligibility = 'eligible'");

/** Current claims of a peer ranked against a query; `eligibleOnly` for context (never pending ones). */
export async function rankClaims(em: Em, peerId: string, r: { query: string; limit: number; eligibleOnly: boolean }): Promise<ClaimRow[]> {
  const { query, limit, eligibleOnly } = r;
  const tsq = anyWordQuery(query);
  return bound<ClaimRow>(em, sql`select * from (
       select (coalesce(ts_rank_cd(c.tsv, to_tsquery('english', ${tsq ?? ''})), 0) + similarity(c.content, ${query}))::float8 as score,
              ${sql.raw(CLAIM_COLUMNS)} ${sql.raw(CLAIM_FROM)}
       where c.peer_id = ${peerId} and c.state = 'current' ${eligibleOnly ? ELIGIBLE : sql.empty}
         and (c.tsv @@ to_tsquery('english', ${tsq ?? ''}) or similarity(c.content, ${query}) > 0.15)
     ) ranked order by score desc, created_at desc limit ${limit}`);
}

/** All claims of a peer in the given states, newest first. */
export async function peerClaims(em: Em, peerId: string, f: { states: Claim['state'][]; eligibleOnly: boolean; limit: number }): Promise<ClaimRow[]> {
  const { states, eligibleOnly, limit } = f;
  return bound<ClaimRow>(em, sql`${CLAIM_SELECT} where c.peer_id = ${peerId} and c.state = any(${states}::text[]) ${eligibleOnly ? ELIGIBLE : sql.empty}
      order by c.created_at desc, c.id desc limit ${limit}`);
}

// Changes -----------------------------------------------------------------------------------------

/** Removes the claim from every conflict of its peer's claims; a claim left with none is supported again. */
export async function clearConflicts(tx: Em, claim: { id: string; peer_id: string }): Promise<void> {
  await bound(
    tx,
    sql`update memory_claim set conflicts_with = array_remove(conflicts_with, ${claim.id}::uuid),
        support_status = case when support_status = 'conflicting' and cardinality(array_remove(conflicts_with, ${claim.id}::uuid)) = 0
                              then 'supported' else support_status end
      where peer_id = ${claim.peer_id} and conflicts_with @> array[${claim.id}::uuid]`,
  );
}

export type HistoryRow = { seq: number; event: 'ADD' | 'UPDATE' | 'DELETE'; prior_revision: string | null; successor_revision: string | null; request_hash: string | null; marker: string; created_at: Date; valid_to: Date | null };

export async function lastHistory(tx: Em, claimId: string): Promise<HistoryRow> {
  const [h] = await bound<HistoryRow>(
    tx,
    sql`select seq, event, prior_revision, successor_revision, request_hash, marker, created_at, valid_to from memory_claim_history where claim_id = ${claimId} order by seq desc limit 1`,
  );
  return h!;
}

/** The transaction's time to the millisecond: a change's validity bound, update time and history time. */
export async function changeTime(tx: Em): Promise<Date> {
  const [now] = await bound<{ now: Date }>(tx, sql`select date_trunc('milliseconds', now()) as now`);
  return now!.now;
}

type Head = { id: string; revision: number; head: string; at: Date };

/** The corrected head: the person's content, current, eligible, asserted by the user, conflicts settled. */
export async function correctHead(tx: Em, h: Head & { content: string }): Promise<void> {
  await bound(
    tx,
    sql`update memory_claim set content = ${h.content}, revision = ${h.revision}, head_revision = ${h.head}, authority = 'correction_memory', state = 'current',
        eligibility = 'eligible', support_status = 'user_asserted', warning = null, conflicts_with = '{}',
        valid_from = ${h.at}, valid_to = null, updated_at = ${h.at} where id = ${h.id}`,
  );
}

/** The withdrawn head: not eligible, valid until `at`, its conflicts dropped. */
export async function withdrawHead(tx: Em, h: Head): Promise<void> {
  await bound(
    tx,
    sql`update memory_claim set state = 'withdrawn', eligibility = 'not_eligible', revision = ${h.revision}, head_revision = ${h.head}, valid_to = ${h.at},
        conflicts_with = '{}', updated_at = ${h.at} where id = ${h.id}`,
  );
}

/** A change's history entry: an UPDATE carries its successor content, a DELETE none. */
export async function appendChange(tx: Em, c: {
  claimId: string; seq: number; accountId: string; event: 'UPDATE' | 'DELETE'; priorContent: string; successorContent: string | null;
  priorRevision: string; successorRevision: string; reason: string; requestHash: string; validFrom: Date; at: Date; marker: string;
}): Promise<void> {
  const change = c.event === 'UPDATE' ? sql`'UPDATE', ${c.priorContent}, ${c.successorContent}` : sql`'DELETE', ${c.priorContent}, null`;
  await bound(tx, sql`insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
         successor_revision, reason, request_hash, valid_from, valid_to, marker, created_at)
       values (${c.claimId}, ${c.seq}, ${c.accountId}, ${change}, ${c.priorRevision}, ${c.successorRevision}, ${c.reason}, ${c.requestHash},
               ${c.validFrom}, ${c.at}, ${c.marker}, ${c.at})`);
}

export type FullHistoryRow = HistoryRow & { prior_content: string | null; successor_content: string | null; reason: string | null; valid_from: Date | null };

/** Every history entry of a claim, oldest first. */
export async function historyOf(em: Em, claimId: string): Promise<FullHistoryRow[]> {
  return bound<FullHistoryRow>(
    em,
    sql`select seq, event, prior_content, successor_content, prior_revision, successor_revision, reason, request_hash, valid_from,
            valid_to, marker, created_at
       from memory_claim_history where claim_id = ${claimId} order by seq`,
  );
}

// The batch commit (commit.ts) ---------------------------------------------------------------------

export type CurrentClaim = {
  id: string; peer_id: string; content: string; slot: string | null; audience: string | null; revision: number; head_revision: string;
  valid_from: Date; last_seq: number;
};

/** The current claims of the peers, in creation order, with what ending one needs (revision, last history entry). */
export async function currentClaims(tx: Em, peerIds: string[]): Promise<CurrentClaim[]> {
  return bound<CurrentClaim>(
    tx,
    sql`select c.id, c.peer_id, c.content, c.slot, c.audience, c.revision, c.head_revision, c.valid_from,
          (select max(h.seq) from memory_claim_history h where h.claim_id = c.id) as last_seq
        from memory_claim c where c.peer_id = any(${peerIds}::uuid[]) and c.state = 'current' order by c.created_at, c.id`,
  );
}

/** A current claim that a later statement supersedes: its validity ends, recorded as its DELETE history entry. */
export type Ending = {
  claim_id: string; account_id: string; revision: number; head_revision: string; seq: number; prior_content: string; prior_revision: string;
  reason: string; valid_from: Date; valid_to: Date; marker: string;
};

/** Ends superseded claims (withdrawn, not eligible, valid until the change) and appends their history, in two statements. */
export async function endSuperseded(tx: Em, endings: Ending[]): Promise<void> {
  const rows = JSON.stringify(endings);
  await bound(
    tx,
    sql`update memory_claim c set state = 'withdrawn', eligibility = 'not_eligible', revision = e.revision, head_revision = e.head_revision,
          valid_to = e.valid_to, conflicts_with = '{}', updated_at = now()
        from jsonb_to_recordset(${rows}::jsonb) as e(claim_id uuid, revision integer, head_revision text, valid_to timestamptz)
        where c.id = e.claim_id and c.state = 'current'`,
  );
  await bound(
    tx,
    sql`insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
          successor_revision, reason, valid_from, valid_to, marker)
        select claim_id, seq, account_id, 'DELETE', prior_content, null, prior_revision, head_revision, reason, valid_from, valid_to, marker
          from jsonb_to_recordset(${rows}::jsonb) as e(claim_id uuid, seq integer, account_id uuid, prior_content text, prior_revision text,
            head_revision text, reason text, valid_from timestamptz, valid_to timestamptz, marker text)
        on conflict do nothing`,
  );
}

/** A derived claim as the batch commit inserts it. */
export type NewClaim = {
  id: string; account_id: string; peer_id: string; session_id: string | null; event_id: string; message_id: string;
  span_start: number; span_end: number; content: string; state: string; eligibility: string; support_status: string;
  categories: string[]; warning: string | null; conflicts_with: string[]; agent_id: string | null; head_revision: string;
  valid_from: Date; slot: string | null; audience: string | null;
};

/** Inserts derived claims in one statement (a claim already there is kept); the ids inserted now. */
export async function insertDerivedClaims(tx: Em, claims: NewClaim[]): Promise<Set<string>> {
  return new Set((await bound<{ id: string }>(
    tx,
    sql`insert into memory_claim (id, account_id, peer_id, session_id, event_id, message_id, span_start, span_end, content, state,
           authority, eligibility, support_status, categories, warning, conflicts_with, agent_id, revision, head_revision, valid_from,
           slot, audience, created_at)
         select id, account_id, peer_id, session_id, event_id, message_id, span_start, span_end, content, state, 'inferred_memory',
           eligibility, support_status, categories, warning, conflicts_with, agent_id, 1, head_revision, valid_from, slot, audience,
           clock_timestamp()
           from jsonb_populate_recordset(null::memory_claim, ${JSON.stringify(claims)}::jsonb)
         on conflict (id) do nothing returning id`,
  )).map((r) => r.id));
}

export type AddEntry = {
  claim_id: string; seq: 1; account_id: string; event: 'ADD'; successor_content: string; successor_revision: string; reason: string;
  valid_from: Date; marker: string;
};

/** The ADD history entries of inserted claims, in one statement. */
export async function insertAddEntries(tx: Em, entries: AddEntry[]): Promise<void> {
  await bound(
    tx,
    sql`insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
             successor_revision, reason, valid_from, marker)
           select claim_id, seq, account_id, event, null, successor_content, null, successor_revision, reason, valid_from, marker
             from jsonb_populate_recordset(null::memory_claim_history, ${JSON.stringify(entries)}::jsonb)
           on conflict do nothing`,
  );
}
