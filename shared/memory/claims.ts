import { sha256Hex } from '../hash.ts';
import { requestHash } from '../idempotency.ts';
import type { Reach } from '../auth/principal.ts';
import type { Claim, ClaimsListRequest } from '../contracts/memory.ts';
import { audienceCondition, bound } from '../db/sql.ts';
import { AppError, notFound } from '../errors.ts';
import { decodeCursor, exactTime, iso, page } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { isUuid } from './events.ts';
import { requireLabel } from './labels.ts';

// Claims (spec 3.5): the current head of each claim in memory_claim, every change appended to
// memory_claim_history. Changes are guarded by head_revision under a row lock, so of two competing
// changes exactly one applies and the other gets 409 revision_conflict with nothing changed.


/** The opaque head revision of a claim version: deterministic in (claim, revision number, content). */
export const revisionToken = (claimId: string, revision: number, content: string) => `rev_${sha256Hex(`${claimId}\n${revision}\n${content}`).slice(0, 24)}`;

/** A history entry's deterministic marker: the same change always has the same marker. */
export const historyMarker = (claimId: string, seq: number, event: string, successorRevision: string | null) =>
  `mk_${sha256Hex(`${claimId}\n${seq}\n${event}\n${successorRevision ?? ''}`).slice(0, 24)}`;

const changeHash = (event: 'UPDATE' | 'DELETE', content: string | null, reason: string) => requestHash([event, content, reason]);

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
};

/**
 * A claim with its conflicts both ways: conflicts_with holds the claims it contradicted when it was
 * made, and `later` the claims made since that contradict it (they list it; migration 0020). A claim
 * is conflicting while either side is non-empty, unless a person has asserted it. A corrected claim
 * also brings its latest correction (`corr`), which is what it cites.
 */
export const CLAIM_SELECT = `select c.id, c.content, p.label as peer_label, s.label as session_label, c.agent_id, c.authority,
  c.state, c.eligibility,
  case when c.support_status = 'supported' and cardinality(later.ids) > 0 then 'conflicting' else c.support_status end as support_status,
  c.categories, c.valid_from, c.valid_to, c.message_id, c.span_start, c.span_end,
  m.content as message_content, c.conflicts_with || later.ids as conflicts_with, c.warning, c.head_revision, c.revision, c.created_at,
  c.updated_at, c.peer_id, corr.successor_revision as corrected_revision, corr.marker as corrected_marker,
  corr.reason as corrected_reason, corr.created_at as corrected_at, ${exactTime('c.created_at')} as created_key
  from memory_claim c join memory_peer p on p.id = c.peer_id
  cross join lateral (select coalesce(array_agg(o.id order by o.created_at, o.id), '{}') as ids from memory_claim o
                       where o.conflicts_with @> array[c.id] and o.peer_id = c.peer_id and not (o.id = any(c.conflicts_with))) later
  left join lateral (select h.successor_revision, h.marker, h.reason, h.created_at from memory_claim_history h
                      where h.claim_id = c.id and h.event = 'UPDATE' and c.authority = 'correction_memory'
                      order by h.seq desc limit 1) corr on true
  left join memory_session s on s.id = c.session_id left join memory_message m on m.id = c.message_id`;

/**
 * What a claim rests on: a corrected claim cites its correction (the person's assertion, not the
 * message it was corrected away from); a derived claim the exact span of its message.
 */
function citationsOf(r: ClaimRow): Claim['citations'] {
  if (r.corrected_revision !== null && r.corrected_marker !== null && r.corrected_at !== null) {
    return [{ kind: 'correction', revision: r.corrected_revision, marker: r.corrected_marker, reason: r.corrected_reason, at: iso(r.corrected_at)!, quote: r.content }];
  }
  if (!r.message_id || r.message_content === null || r.span_start === null || r.span_end === null) return [];
  return [{
    kind: 'message', message_id: r.message_id, session_id: r.session_label, start: r.span_start, end: r.span_end,
    quote: r.message_content.slice(r.span_start, r.span_end),
  }];
}

export function claimRecord(r: ClaimRow): Claim {
  return {
    id: r.id,
    content: r.content,
    peer_id: r.peer_label,
    session_id: r.session_label,
    agent_id: r.agent_id,
    authority: r.authority,
    state: r.state,
    eligibility: r.eligibility,
    support_status: r.support_status,
    categories: r.categories ?? [],
    valid_from: iso(r.valid_from)!,
    valid_to: iso(r.valid_to),
    citations: citationsOf(r),
    conflicts_with: r.conflicts_with ?? [],
    warning: r.warning,
    head_revision: r.head_revision,
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
  };
}

/** A claim of the account inside the key's audiences (a claim carries its message's audience), or 404. */
async function findClaim(em: Em, reach: Reach, claimId: string, lock = false): Promise<ClaimRow> {
  const inReach = audienceCondition('c.audience', reach.audiences);
  const [row] = isUuid(claimId)
    ? await bound<ClaimRow>(em, `${CLAIM_SELECT} where c.id = ? and c.account_id = ?${inReach.sql}${lock ? ' for update of c' : ''}`, [claimId, reach.accountId, ...inReach.params])
    : [];
  if (!row) throw notFound('No claim with this id.');
  return row;
}

export async function getClaim(em: Em, reach: Reach, claimId: string): Promise<Claim> {
  return claimRecord(await findClaim(em, reach, claimId));
}

/** Claims in a state (default current), newest first, optionally of one peer and/or session. */
export async function listClaims(em: Em, reach: Reach, req: ClaimsListRequest) {
  const inReach = audienceCondition('c.audience', reach.audiences);
  const where = [`c.account_id = ? and c.state = ?${inReach.sql}`];
  const params: unknown[] = [reach.accountId, req.state, ...inReach.params];
  if (req.peer_id !== undefined) {
    where.push('c.peer_id = ?');
    params.push((await requireLabel(em, reach, 'peer', req.peer_id)).id);
  }
  if (req.session_id !== undefined) {
    where.push('c.session_id = ?');
    params.push((await requireLabel(em, reach, 'session', req.session_id)).id);
  }
  const after = decodeCursor(req.cursor, 2) as [string, string] | undefined;
  if (after) {
    where.push('(c.created_at, c.id) < (?::timestamptz, ?::uuid)');
    params.push(...after);
  }
  const rows = await bound<ClaimRow>(em, `${CLAIM_SELECT} where ${where.join(' and ')} order by c.created_at desc, c.id desc limit ?`, [...params, req.limit + 1]);
  return page(rows, req.limit, (r) => [r.created_key, r.id], claimRecord);
}

/**
 * A tsquery matching any of the query's words (letters and digits only, so nothing in the text can
 * change the query's syntax); null when there are none.
 */
export function anyWordQuery(text: string): string | null {
  const words = [...new Set((text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []).filter((w) => w.length >= 2))].slice(0, 32);
  return words.length ? words.join(' | ') : null;
}

/** Ranked search over one peer's current claims (full text, then trigram similarity). */
export async function queryClaims(em: Em, reach: Reach, req: { peer_id: string; query: string; limit: number }) {
  // A peer's claims carry the peer's audience: reaching the peer is reaching its claims.
  const peer = await requireLabel(em, reach, 'peer', req.peer_id);
  const rows = await rankClaims(em, peer.id, req.query, req.limit, false);
  return {
    schemaVersion: 'service-memory-page-v1' as const,
    items: rows.map((r) => ({ ...claimRecord(r), score: Number(r.score ?? 0) })),
    pagination: { limit: req.limit, returned: rows.length, has_more: false, next_cursor: null },
  };
}

/** Current claims of a peer ranked against a query; `eligibleOnly` for context (never pending ones). */
export async function rankClaims(em: Em, peerId: string, query: string, limit: number, eligibleOnly: boolean): Promise<ClaimRow[]> {
  const tsq = anyWordQuery(query);
  return bound<ClaimRow>(
    em,
    `select * from (
       ${CLAIM_SELECT.replace('select ', `select (coalesce(ts_rank_cd(c.tsv, to_tsquery('english', ?)), 0) + similarity(c.content, ?))::float8 as score, `)}
       where c.peer_id = ? and c.state = 'current' ${eligibleOnly ? "and c.eligibility = 'eligible'" : ''}
         and (c.tsv @@ to_tsquery('english', ?) or similarity(c.content, ?) > 0.15)
     ) ranked order by score desc, created_at desc limit ?`,
    [tsq ?? '', query, peerId, tsq ?? '', query, limit],
  );
}

/** All claims of a peer in the given states, newest first. */
export async function peerClaims(em: Em, peerId: string, states: Claim['state'][], eligibleOnly: boolean, limit = 200): Promise<ClaimRow[]> {
  return bound<ClaimRow>(
    em,
    `${CLAIM_SELECT} where c.peer_id = ? and c.state = any(?::text[]) ${eligibleOnly ? "and c.eligibility = 'eligible'" : ''}
      order by c.created_at desc, c.id desc limit ?`,
    [peerId, states, limit],
  );
}

/** A change settles any conflict the claim was part of: the person has decided. */
async function clearConflicts(tx: Em, claim: ClaimRow): Promise<void> {
  await bound(
    tx,
    `update memory_claim set conflicts_with = array_remove(conflicts_with, ?::uuid),
        support_status = case when support_status = 'conflicting' and cardinality(array_remove(conflicts_with, ?::uuid)) = 0
                              then 'supported' else support_status end
      where peer_id = ? and conflicts_with @> array[?::uuid]`,
    [claim.id, claim.id, claim.peer_id, claim.id],
  );
}

type HistoryRow = { seq: number; event: 'ADD' | 'UPDATE' | 'DELETE'; prior_revision: string | null; successor_revision: string | null; request_hash: string | null; marker: string; created_at: Date; valid_to: Date | null };

async function lastHistory(tx: Em, claimId: string): Promise<HistoryRow> {
  const [h] = await bound<HistoryRow>(
    tx,
    'select seq, event, prior_revision, successor_revision, request_hash, marker, created_at, valid_to from memory_claim_history where claim_id = ? order by seq desc limit 1',
    [claimId],
  );
  return h!;
}

/**
 * The guard of every change: the given head_revision must be the claim's head, or the request must be
 * an exact retry of the change that produced the current head (then the stored result is replayed).
 */
async function guard(tx: Em, claim: ClaimRow, given: string, event: 'UPDATE' | 'DELETE', hash: string): Promise<HistoryRow | 'apply'> {
  if (given === claim.head_revision && claim.state !== 'withdrawn') return 'apply';
  const last = await lastHistory(tx, claim.id);
  if (last.event === event && last.prior_revision === given && last.request_hash === hash && last.successor_revision === claim.head_revision) {
    return last;
  }
  const why = claim.state === 'withdrawn' ? 'the claim is withdrawn' : 'head_revision is not the current head of this claim';
  throw new AppError(409, 'revision_conflict', `Not changed: ${why}. Read the claim again and retry with its head_revision.`);
}

/**
 * PUT: replaces the content (a correction). The corrected head has authority correction_memory, state
 * current, eligibility eligible; a pending_review proposal is accepted this way. The prior version stays
 * in history.
 */
export async function updateClaim(em: Em, reach: Reach, claimId: string, req: { content: string; head_revision: string; reason: string }) {
  const hash = changeHash('UPDATE', req.content, req.reason);
  return em.transactional(async (tx) => {
    const claim = await findClaim(tx, reach, claimId, true);
    const g = await guard(tx, claim, req.head_revision, 'UPDATE', hash);
    if (g !== 'apply') {
      return { schemaVersion: 'service-memory-claim-update-v1' as const, claim: claimRecord(claim), prior_revision: req.head_revision, marker: g.marker, replayed: true };
    }
    const revision = claim.revision + 1;
    const head = revisionToken(claim.id, revision, req.content);
    const last = await lastHistory(tx, claim.id);
    const seq = last.seq + 1;
    const marker = historyMarker(claim.id, seq, 'UPDATE', head);
    const [now] = await bound<{ now: Date }>(tx, "select date_trunc('milliseconds', now()) as now", []);
    await bound(
      tx,
      `update memory_claim set content = ?, revision = ?, head_revision = ?, authority = 'correction_memory', state = 'current',
          eligibility = 'eligible', support_status = 'user_asserted', warning = null, conflicts_with = '{}',
          valid_from = ?, valid_to = null, updated_at = ? where id = ?`,
      [req.content, revision, head, now!.now, now!.now, claim.id],
    );
    await bound(
      tx,
      `insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
         successor_revision, reason, request_hash, valid_from, valid_to, marker, created_at)
       values (?, ?, ?, 'UPDATE', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [claim.id, seq, reach.accountId, claim.content, req.content, claim.head_revision, head, req.reason, hash, claim.valid_from, now!.now, marker, now!.now],
    );
    await clearConflicts(tx, claim);
    const updated = await findClaim(tx, reach, claim.id);
    return { schemaVersion: 'service-memory-claim-update-v1' as const, claim: claimRecord(updated), prior_revision: claim.head_revision, marker, replayed: false };
  });
}

/** DELETE: withdraws the claim (not eligible, valid_to set); history keeps every version. */
export async function withdrawClaim(em: Em, reach: Reach, claimId: string, req: { head_revision: string; reason: string }) {
  const hash = changeHash('DELETE', null, req.reason);
  return em.transactional(async (tx) => {
    const claim = await findClaim(tx, reach, claimId, true);
    const g = await guard(tx, claim, req.head_revision, 'DELETE', hash);
    const receipt = (head: string, validTo: Date, marker: string, replayed: boolean) => ({
      schemaVersion: 'service-memory-claim-delete-v1' as const,
      claim_id: claim.id,
      state: 'withdrawn' as const,
      eligibility: 'not_eligible' as const,
      prior_revision: req.head_revision,
      head_revision: head,
      valid_to: iso(validTo)!,
      marker,
      replayed,
    });
    if (g !== 'apply') return receipt(claim.head_revision, claim.valid_to ?? g.created_at, g.marker, true);
    const revision = claim.revision + 1;
    const head = revisionToken(claim.id, revision, claim.content);
    const seq = (await lastHistory(tx, claim.id)).seq + 1;
    const marker = historyMarker(claim.id, seq, 'DELETE', head);
    const [now] = await bound<{ now: Date }>(tx, "select date_trunc('milliseconds', now()) as now", []);
    await bound(
      tx,
      `update memory_claim set state = 'withdrawn', eligibility = 'not_eligible', revision = ?, head_revision = ?, valid_to = ?,
          conflicts_with = '{}', updated_at = ? where id = ?`,
      [revision, head, now!.now, now!.now, claim.id],
    );
    await bound(
      tx,
      `insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
         successor_revision, reason, request_hash, valid_from, valid_to, marker, created_at)
       values (?, ?, ?, 'DELETE', ?, null, ?, ?, ?, ?, ?, ?, ?, ?)`,
      [claim.id, seq, reach.accountId, claim.content, claim.head_revision, head, req.reason, hash, claim.valid_from, now!.now, marker, now!.now],
    );
    await clearConflicts(tx, claim);
    return receipt(head, now!.now, marker, false);
  });
}

type FullHistoryRow = HistoryRow & { prior_content: string | null; successor_content: string | null; reason: string | null; valid_from: Date | null };

/**
 * Every version of a claim, oldest first. For UPDATE and DELETE, `prior` is the version that ended
 * (valid from its start until this change); `successor` is the version that began (ADD: at the
 * message time; UPDATE: at the correction).
 */
export async function claimHistory(em: Em, reach: Reach, claimId: string) {
  const claim = await findClaim(em, reach, claimId);
  const rows = await bound<FullHistoryRow>(
    em,
    `select seq, event, prior_content, successor_content, prior_revision, successor_revision, reason, request_hash, valid_from,
            valid_to, marker, created_at
       from memory_claim_history where claim_id = ? order by seq`,
    [claim.id],
  );
  return {
    schemaVersion: 'service-memory-claim-history-v1' as const,
    claim_id: claim.id,
    entries: rows.map((h, i) => ({
      seq: h.seq,
      event: h.event,
      prior: h.event === 'ADD' ? null : { content: h.prior_content ?? '', revision: h.prior_revision ?? '', valid_from: iso(h.valid_from), valid_to: iso(h.valid_to) },
      successor:
        h.event === 'DELETE'
          ? null
          : { content: h.successor_content ?? '', revision: h.successor_revision ?? '', valid_from: iso(h.event === 'ADD' ? h.valid_from : h.valid_to), valid_to: iso(rows[i + 1]?.valid_to) },
      reason: h.reason,
      at: iso(h.created_at)!,
      marker: h.marker,
    })),
  };
}
