import { deterministicUuid } from '../../platform/ids.ts';
import { toHex } from '../retrieval/embeddings.ts';
import { historyMarker, revisionToken } from './claims.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { currentClaims, endSuperseded, insertAddEntries, insertDerivedClaims, type CurrentClaim, type Ending, type NewClaim } from './claims.queries.ts';
import type { Proposal } from './deriver.ts';
import { endEvents, makeAvailable, makeAvailableWithVectors, type Claimed, type EventEnd, type StoredMessage } from './events.queries.ts';
import { lockLiveLabels } from './labels.queries.ts';
import { injectionWarning } from './screen.ts';

/** An add-event ready to commit: begun, its messages loaded, its claims derived (possibly none). */
export type DerivedAdd = { ev: Claimed; messages: StoredMessage[]; proposals: Proposal[] };

export const GONE = 'The peer or session was deleted before these messages were processed; nothing was stored or derived.';

/** Vectors of the messages, made by this model (embeddings.ts). */
type Vectors = { model: string; byMessage: Map<string, Float32Array> };

const normalized = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();

/**
 * Commits add-events in one transaction, with a fixed number of statements whatever their count: locks
 * their peers and sessions (FOR SHARE: a deletion running now waits for this transaction or wins), reads
 * the current claims of those peers once, then decides each event in write order in memory (decideAdds),
 * so a later event of the batch meets the claims of earlier ones exactly as if they had been committed
 * one by one. Then inserts the claims and their ADD history entries (storeClaims), ends the claims they
 * supersede (endSuperseded), makes the messages
 * available and ends every event, succeeded (or failed when its peer or session is gone). Derived memory
 * therefore becomes readable exactly when its event succeeds. Claim ids are deterministic (uuid5 of the
 * event id) and inserts are ON CONFLICT DO NOTHING, so a retry after a crash writes nothing twice.
 */
export async function commitAdds(em: Em, adds: DerivedAdd[], vectors: Vectors | null = null): Promise<EventEnd[]> {
  if (adds.length === 0) return [];
  const peerIds = [...new Set(adds.map((a) => a.ev.peer_id!))];
  const sessionIds = [...new Set(adds.map((a) => a.ev.session_id!))];
  return em.transactional(async (tx) => {
    const alive = await lockLiveLabels(tx, peerIds, sessionIds);
    const current = new Map<string, CurrentClaim[]>(peerIds.map((p) => [p, []]));
    for (const c of await currentClaims(tx, peerIds)) current.get(c.peer_id)!.push(c);
    const { claims, endings, ends } = decideAdds(adds, { peers: new Set(alive.peers), sessions: new Set(alive.sessions) }, current);
    if (claims.length) await storeClaims(tx, claims);
    if (endings.length) await endSuperseded(tx, endings);
    await publishMessages(tx, adds, ends, vectors);
    await endEvents(tx, ends);
    return ends;
  });
}

/**
 * Each event's end and claims, in write order, against the peers' current claims (`current`, which it
 * extends with each new current claim). Every proposal of an event becomes its own claim. Junk control:
 * a statement already current for the peer is not stored twice. A new statement about a slot the peer
 * already has a current claim for either supersedes it, when the statement marks a change ("I live in
 * Madrid now", "I moved to Madrid"): the earlier claim's validity ends where the new one begins and its
 * history records why; or, without a change marker, is surfaced as a conflict with it, never
 * overwriting it (the conflict is stored on the new claim only; reads add the other direction,
 * CLAIM_SELECT in claims.queries.ts). Statements of one event never conflict with or supersede each
 * other: they were said together. Hostile content is held for review.
 */
function decideAdds(adds: DerivedAdd[], live: { peers: Set<string>; sessions: Set<string> }, current: Map<string, CurrentClaim[]>) {
  const claims: NewClaim[] = [];
  const endings: Ending[] = [];
  const ends: EventEnd[] = [];
  for (const add of adds) {
    const { ev, messages, proposals } = add;
    if (!live.peers.has(ev.peer_id!) || !live.sessions.has(ev.session_id!)) {
      ends.push({ id: ev.id, status: 'failed', outcome: null, failure: { message: GONE } });
      continue;
    }
    const outcome: Record<string, unknown> = { messages: messages.length, claim_id: null, claim_state: null };
    ends.push({ id: ev.id, status: 'succeeded', outcome, failure: null });
    if (!ev.infer) {
      outcome.note = 'infer was false: the messages were stored without deriving a claim.';
      continue;
    }
    if (!proposals.length) {
      outcome.note = 'Nothing salient to remember: no claim was derived.';
      continue;
    }
    const peerClaims = current.get(ev.peer_id!)!;
    const before = peerClaims.slice();
    const ids: string[] = [];
    const conflicts = new Set<string>();
    const superseded = new Set<string>();
    proposals.forEach((p, n) => {
      const claim = decideClaim(add, p, { n, before, peerClaims, outcome });
      if (!claim) return;
      claims.push(claim.row);
      ids.push(claim.row.id);
      for (const c of claim.row.conflicts_with) conflicts.add(c);
      for (const e of claim.endings) {
        if (superseded.has(e.claim_id)) continue;
        superseded.add(e.claim_id);
        endings.push(e);
      }
    });
    // Claims this event ended are no longer current for the events after it.
    current.set(ev.peer_id!, peerClaims.filter((c) => !superseded.has(c.id)));
    const first = claims.find((c) => c.id === ids[0]);
    Object.assign(outcome, {
      claim_id: first?.id ?? null,
      claim_state: first?.state ?? null,
      claim_ids: ids,
      ...(conflicts.size ? { conflicts_with: [...conflicts] } : {}),
      ...(superseded.size ? { supersedes: [...superseded] } : {}),
      ...(first?.warning ? { note: first.warning } : {}),
    });
  }
  return { claims, endings, ends };
}

/**
 * The claim of one proposal (the n-th of its event), or none when it duplicates a current one; notes a
 * duplicate in `outcome`. `before`: the peer's current claims before this event, the only ones it can
 * conflict with or supersede; `peerClaims`: those plus the event's own claims so far.
 */
type Seen = { n: number; before: CurrentClaim[]; peerClaims: CurrentClaim[]; outcome: Record<string, unknown> };

function decideClaim({ ev, messages }: DerivedAdd, p: Proposal, { n, before, peerClaims, outcome }: Seen) {
  const hostile = p.injection !== null;
  if (!hostile) {
    const same = peerClaims.find((c) => ((c.slot !== null && c.slot === (p.slot ?? '')) || c.content.toLowerCase() === p.content.toLowerCase())
      && normalized(c.content) === normalized(p.content));
    if (same) {
      if (outcome.duplicate_of === undefined) Object.assign(outcome, { note: `Already remembered as claim ${same.id}: no duplicate was stored.`, duplicate_of: same.id });
      return null;
    }
  }
  // The first claim of an event keeps the id a single claim per event always had.
  const id = deterministicUuid(n === 0 ? `memory-claim:${ev.id}` : `memory-claim:${ev.id}:${n}`);
  const cited = messages[p.message]!;
  const said = new Date(cited.created_at);
  const validFrom = p.validFrom && new Date(p.validFrom) < said ? new Date(p.validFrom) : said;
  const sameSlot = hostile || !p.slot ? [] : before.filter((c) => c.slot === p.slot);
  const supersede = p.change === true ? sameSlot.filter((c) => c.audience === cited.audience) : [];
  const conflicts = sameSlot.filter((c) => !supersede.includes(c)).map((c) => c.id);
  const head = revisionToken(id, 1, p.content);
  const endings: Ending[] = supersede.map((c) => {
    const revision = c.revision + 1;
    const successor = revisionToken(c.id, revision, c.content);
    const seq = c.last_seq + 1;
    return {
      claim_id: c.id, account_id: ev.account_id, revision, head_revision: successor, seq, prior_content: c.content, prior_revision: c.head_revision,
      reason: `superseded by claim ${id}: ${p.content}`, valid_from: c.valid_from, valid_to: validFrom > new Date(c.valid_from) ? validFrom : new Date(c.valid_from),
      marker: historyMarker(c.id, seq, 'DELETE', successor),
    };
  });
  const warning = hostile ? injectionWarning(p.injection!) : null;
  if (!hostile) {
    peerClaims.push({
      id, peer_id: ev.peer_id!, content: p.content, slot: p.slot, audience: cited.audience, revision: 1, head_revision: head, valid_from: validFrom, last_seq: 1,
    });
  }
  const row: NewClaim = {
    id, account_id: ev.account_id, peer_id: ev.peer_id!, session_id: ev.session_id, event_id: ev.id, message_id: cited.id,
    span_start: p.start, span_end: p.end, content: p.content, state: hostile ? 'pending_review' : 'current',
    eligibility: hostile ? 'not_eligible' : 'eligible', support_status: conflicts.length ? 'conflicting' : 'supported',
    categories: p.categories, warning, conflicts_with: conflicts, agent_id: ev.agent_id, head_revision: head,
    valid_from: validFrom, slot: p.slot, audience: cited.audience,
  };
  return { row, endings };
}

/** Inserts the claims, and the ADD history entries of those inserted now (a retry's are already there). */
async function storeClaims(tx: Em, claims: NewClaim[]): Promise<void> {
  const inserted = await insertDerivedClaims(tx, claims);
  const history = claims.filter((c) => inserted.has(c.id)).map((c) => ({
    claim_id: c.id, seq: 1 as const, account_id: c.account_id, event: 'ADD' as const, successor_content: c.content, successor_revision: c.head_revision,
    reason: c.state === 'pending_review' ? 'derived; held for review' : 'derived from a session message', valid_from: c.valid_from,
    marker: historyMarker(c.id, 1, 'ADD', c.head_revision),
  }));
  if (history.length) await insertAddEntries(tx, history);
}

/** Makes the succeeded events' messages available, with their vectors when there are any. */
async function publishMessages(tx: Em, adds: DerivedAdd[], ends: EventEnd[], vectors: Vectors | null): Promise<void> {
  const succeeded = ends.filter((e) => e.status === 'succeeded').map((e) => e.id);
  if (!succeeded.length) return;
  if (!vectors) {
    await makeAvailable(tx, succeeded);
    return;
  }
  const ok = new Set(succeeded);
  const ms = adds.filter((a) => ok.has(a.ev.id)).flatMap((a) => a.messages);
  await makeAvailableWithVectors(tx, vectors.model, ms.map((m) => m.id), ms.map((m) => toHex(vectors.byMessage.get(m.id))));
}
