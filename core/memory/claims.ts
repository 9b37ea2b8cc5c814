import { sha256Hex } from '../../platform/hash.ts';
import { requestHash } from '../idempotency.ts';
import type { Reach } from '../auth/principal.ts';
import type { Claim, ClaimsListRequest } from '../contracts/memory.ts';
import { AppError, notFound } from '../../platform/errors.ts';
import { decodeCursor, iso, page } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import {
  appendChange, changeTime, claimInReach, claimsAfter, clearConflicts, correctHead, historyOf, lastHistory, rankClaims, withdrawHead,
  type ClaimRow, type HistoryRow,
} from './claims.queries.ts';
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

export const changeHash = (event: 'UPDATE' | 'DELETE', content: string | null, reason: string) => requestHash([event, content, reason]);

/**
 * What a claim rests on: a corrected claim cites its correction (the person's assertion, not the
 * message it was corrected away from); a derived claim the exact span of its message.
 */
function citationsOf(r: ClaimRow): Claim['citations'] {
  if (r.corrected_revision !== null && r.corrected_marker !== null && r.corrected_at !== null) {
    return [{ kind: 'correction', revision: r.corrected_revision, marker: r.corrected_marker, reason: r.corrected_reason, at: iso(r.corrected_at)!, quote: r.content }];
  }
  if (!r.message_id || r.message_redacted || r.message_content === null || r.span_start === null || r.span_end === null) return [];
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
  const row = isUuid(claimId) ? await claimInReach(em, reach, claimId, lock) : undefined;
  if (!row) throw notFound('No claim with this id.');
  return row;
}

export async function getClaim(em: Em, reach: Reach, claimId: string): Promise<Claim> {
  return claimRecord(await findClaim(em, reach, claimId));
}

/** Claims in a state (default current), newest first, optionally of one peer and/or session. */
export async function listClaims(em: Em, reach: Reach, req: ClaimsListRequest) {
  const peerId = req.peer_id !== undefined ? (await requireLabel(em, reach, 'peer', req.peer_id)).id : undefined;
  const sessionId = req.session_id !== undefined ? (await requireLabel(em, reach, 'session', req.session_id)).id : undefined;
  const after = decodeCursor(req.cursor, 2) as [string, string] | undefined;
  const rows = await claimsAfter(em, reach, { state: req.state, peerId, sessionId, after, limit: req.limit + 1 });
  return page(rows, req.limit, (r) => [r.created_key, r.id], claimRecord);
}

/** Ranked search over one peer's current claims (full text, then trigram similarity). */
export async function queryClaims(em: Em, reach: Reach, req: { peer_id: string; query: string; limit: number }) {
  // A peer's claims carry the peer's audience: reaching the peer is reaching its claims.
  const peer = await requireLabel(em, reach, 'peer', req.peer_id);
  const rows = await rankClaims(em, peer.id, { query: req.query, limit: req.limit, eligibleOnly: false });
  return {
    schemaVersion: 'service-memory-page-v1' as const,
    items: rows.map((r) => ({ ...claimRecord(r), score: Number(r.score ?? 0) })),
    pagination: { limit: req.limit, returned: rows.length, has_more: false, next_cursor: null },
  };
}

/**
 * The guard of every change: the given head_revision must be the claim's head, or the request must be
 * an exact retry of the change that produced the current head (then the stored result is replayed).
 */
async function guard(tx: Em, claim: ClaimRow, change: { given: string; event: 'UPDATE' | 'DELETE'; hash: string }): Promise<HistoryRow | 'apply'> {
  const { given, event, hash } = change;
  if (given === claim.head_revision && claim.state !== 'withdrawn') return 'apply';
  const last = await lastHistory(tx, claim.id);
  if (last.event === event && last.prior_revision === given && last.request_hash === hash && last.successor_revision === claim.head_revision) {
    return last;
  }
  const why = claim.state === 'withdrawn' ? 'the claim is withdrawn' : 'head_revision is not the current head of this claim';
  throw new AppError(409, 'revision_conflict', `Not changed: ${why}. Read the claim again and retry with its head_revision.`);
}

/**
 * Appends an applied change to the claim's history. A change settles any conflict the claim was part
 * of: the person has decided.
 */
async function recordChange(tx: Em, reach: Reach, claim: ClaimRow, c: {
  event: 'UPDATE' | 'DELETE'; successorContent: string | null; head: string; seq: number; marker: string; reason: string; hash: string; at: Date;
}): Promise<void> {
  await appendChange(tx, {
    claimId: claim.id, seq: c.seq, accountId: reach.accountId, event: c.event, priorContent: claim.content, successorContent: c.successorContent,
    priorRevision: claim.head_revision, successorRevision: c.head, reason: c.reason, requestHash: c.hash, validFrom: claim.valid_from, at: c.at, marker: c.marker,
  });
  await clearConflicts(tx, claim);
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
    const g = await guard(tx, claim, { given: req.head_revision, event: 'UPDATE', hash });
    if (g !== 'apply') {
      return { schemaVersion: 'service-memory-claim-update-v1' as const, claim: claimRecord(claim), prior_revision: req.head_revision, marker: g.marker, replayed: true };
    }
    const revision = claim.revision + 1;
    const head = revisionToken(claim.id, revision, req.content);
    const last = await lastHistory(tx, claim.id);
    const seq = last.seq + 1;
    const marker = historyMarker(claim.id, seq, 'UPDATE', head);
    const now = await changeTime(tx);
    await correctHead(tx, { id: claim.id, revision, head, at: now, content: req.content });
    await recordChange(tx, reach, claim, { event: 'UPDATE', successorContent: req.content, head, seq, marker, reason: req.reason, hash, at: now });
    const updated = await findClaim(tx, reach, claim.id);
    return { schemaVersion: 'service-memory-claim-update-v1' as const, claim: claimRecord(updated), prior_revision: claim.head_revision, marker, replayed: false };
  });
}

/** DELETE: withdraws the claim (not eligible, valid_to set); history keeps every version. */
export async function withdrawClaim(em: Em, reach: Reach, claimId: string, req: { head_revision: string; reason: string }) {
  const hash = changeHash('DELETE', null, req.reason);
  return em.transactional(async (tx) => {
    const claim = await findClaim(tx, reach, claimId, true);
    const g = await guard(tx, claim, { given: req.head_revision, event: 'DELETE', hash });
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
    const now = await changeTime(tx);
    const { head, marker } = await endClaim(tx, reach, claim, { reason: req.reason, hash, at: now });
    return receipt(head, now, marker, false);
  });
}

/**
 * Withdraws a claim locked by the caller's transaction at `at` (not eligible, valid until then), its
 * DELETE entry appended to the history: a person's withdrawal, or a redaction of its message.
 */
export async function endClaim(tx: Em, reach: Reach, claim: ClaimRow, c: { reason: string; hash: string; at: Date }) {
  const revision = claim.revision + 1;
  const head = revisionToken(claim.id, revision, claim.content);
  const seq = (await lastHistory(tx, claim.id)).seq + 1;
  const marker = historyMarker(claim.id, seq, 'DELETE', head);
  await withdrawHead(tx, { id: claim.id, revision, head, at: c.at });
  await recordChange(tx, reach, claim, { event: 'DELETE', successorContent: null, head, seq, marker, reason: c.reason, hash: c.hash, at: c.at });
  return { head, marker };
}

/**
 * Every version of a claim, oldest first. For UPDATE and DELETE, `prior` is the version that ended
 * (valid from its start until this change); `successor` is the version that began (ADD: at the
 * message time; UPDATE: at the correction).
 */
export async function claimHistory(em: Em, reach: Reach, claimId: string) {
  const claim = await findClaim(em, reach, claimId);
  const rows = await historyOf(em, claim.id);
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
