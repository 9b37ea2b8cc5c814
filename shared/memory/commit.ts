import { deterministicUuid } from '../ids.ts';
import { toHex } from '../retrieval/embeddings.ts';
import { historyMarker, revisionToken } from './claims.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';
import type { Proposal } from './deriver.ts';
import type { Claimed, StoredMessage } from './events.queries.ts';
import { injectionWarning } from './screen.ts';

/** An add-event ready to commit: begun, its messages loaded, its claim derived (or none). */
export type DerivedAdd = { ev: Claimed; messages: StoredMessage[]; proposal: Proposal | null };

export const GONE = 'The peer or session was deleted before these messages were processed; nothing was stored or derived.';

type CurrentClaim = { id: string; peer_id: string; content: string; slot: string | null };
type ClaimRow = {
  id: string; account_id: string; peer_id: string; session_id: string | null; event_id: string; message_id: string;
  span_start: number; span_end: number; content: string; state: string; eligibility: string; support_status: string;
  categories: string[]; warning: string | null; conflicts_with: string[]; agent_id: string | null; head_revision: string;
  valid_from: Date; slot: string | null; audience: string | null;
};
type EventEnd = { id: string; status: 'succeeded' | 'failed'; outcome: Record<string, unknown> | null; failure: { message: string } | null };

const normalized = (s: string) => s.toLowerCase().replace(/[^\p{L}\p{N}]+/gu, ' ').trim();

/**
 * Commits add-events in one transaction, with a fixed number of statements whatever their count: locks
 * their peers and sessions (FOR SHARE: a deletion running now waits for this transaction or wins), reads
 * the current claims of those peers once, then decides each event in write order in memory (junk
 * control: a statement already current for the peer is not stored twice; a new statement about a slot
 * the peer already has a current claim for is surfaced as a conflict with it, never overwriting it;
 * hostile content is held for review), so a later event of the batch meets the claims of earlier ones
 * exactly as if they had been committed one by one. Then inserts the claims and their ADD history
 * entries (a conflict is stored on the new claim only; reads add the other direction, CLAIM_SELECT),
 * makes the messages available and ends
 * every event, succeeded (or failed when its peer or session is gone). Derived memory therefore becomes
 * readable exactly when its event succeeds. Claim ids are deterministic (uuid5 of the event id) and
 * inserts are ON CONFLICT DO NOTHING, so a retry after a crash writes nothing twice.
 */
export async function commitAdds(
  em: Em,
  adds: DerivedAdd[],
  /** Vectors of the messages, made by this model (embeddings.ts). */
  vectors: { model: string; byMessage: Map<string, Float32Array> } | null = null,
): Promise<EventEnd[]> {
  if (adds.length === 0) return [];
  const peerIds = [...new Set(adds.map((a) => a.ev.peer_id!))];
  const sessionIds = [...new Set(adds.map((a) => a.ev.session_id!))];
  return em.transactional(async (tx) => {
    const [alive] = await bound<{ peers: string[]; sessions: string[] }>(
      tx,
      `select (select coalesce(array_agg(id), '{}') from (select id from memory_peer where id = any(?::uuid[]) order by id for share) p) as peers,
              (select coalesce(array_agg(id), '{}') from (select id from memory_session where id = any(?::uuid[]) order by id for share) s) as sessions`,
      [peerIds, sessionIds],
    );
    const livePeers = new Set(alive!.peers);
    const liveSessions = new Set(alive!.sessions);
    const current = new Map<string, CurrentClaim[]>(peerIds.map((p) => [p, []]));
    for (const c of await bound<CurrentClaim>(
      tx,
      "select id, peer_id, content, slot from memory_claim where peer_id = any(?::uuid[]) and state = 'current' order by created_at, id",
      [peerIds],
    )) current.get(c.peer_id)!.push(c);

    const claims: ClaimRow[] = [];
    const ends: EventEnd[] = [];
    for (const { ev, messages, proposal: p } of adds) {
      if (!livePeers.has(ev.peer_id!) || !liveSessions.has(ev.session_id!)) {
        ends.push({ id: ev.id, status: 'failed', outcome: null, failure: { message: GONE } });
        continue;
      }
      const outcome: Record<string, unknown> = { messages: messages.length, claim_id: null, claim_state: null };
      ends.push({ id: ev.id, status: 'succeeded', outcome, failure: null });
      if (!ev.infer) {
        outcome.note = 'infer was false: the messages were stored without deriving a claim.';
        continue;
      }
      if (!p) {
        outcome.note = 'Nothing salient to remember: no claim was derived.';
        continue;
      }
      const peerClaims = current.get(ev.peer_id!)!;
      const hostile = p.injection !== null;
      if (!hostile) {
        const same = peerClaims.find((c) => ((c.slot !== null && c.slot === (p.slot ?? '')) || c.content.toLowerCase() === p.content.toLowerCase())
          && normalized(c.content) === normalized(p.content));
        if (same) {
          Object.assign(outcome, { note: `Already remembered as claim ${same.id}: no duplicate was stored.`, claim_id: null, duplicate_of: same.id });
          continue;
        }
      }
      const conflicts = hostile || !p.slot ? [] : peerClaims.filter((c) => c.slot === p.slot).map((c) => c.id);
      const id = deterministicUuid(`memory-claim:${ev.id}`);
      const cited = messages[p.message]!;
      const warning = hostile ? injectionWarning(p.injection!) : null;
      claims.push({
        id, account_id: ev.account_id, peer_id: ev.peer_id!, session_id: ev.session_id, event_id: ev.id, message_id: cited.id,
        span_start: p.start, span_end: p.end, content: p.content, state: hostile ? 'pending_review' : 'current',
        eligibility: hostile ? 'not_eligible' : 'eligible', support_status: conflicts.length ? 'conflicting' : 'supported',
        categories: p.categories, warning, conflicts_with: conflicts, agent_id: ev.agent_id, head_revision: revisionToken(id, 1, p.content),
        valid_from: cited.created_at, slot: p.slot, audience: cited.audience,
      });
      if (!hostile) peerClaims.push({ id, peer_id: ev.peer_id!, content: p.content, slot: p.slot });
      Object.assign(outcome, {
        claim_id: id,
        claim_state: hostile ? 'pending_review' : 'current',
        ...(conflicts.length ? { conflicts_with: conflicts } : {}),
        ...(warning ? { note: warning } : {}),
      });
    }
    if (claims.length) {
      const inserted = new Set((await bound<{ id: string }>(
        tx,
        `insert into memory_claim (id, account_id, peer_id, session_id, event_id, message_id, span_start, span_end, content, state,
           authority, eligibility, support_status, categories, warning, conflicts_with, agent_id, revision, head_revision, valid_from,
           slot, audience, created_at)
         select id, account_id, peer_id, session_id, event_id, message_id, span_start, span_end, content, state, 'inferred_memory',
           eligibility, support_status, categories, warning, conflicts_with, agent_id, 1, head_revision, valid_from, slot, audience,
           clock_timestamp()
           from jsonb_populate_recordset(null::memory_claim, ?::jsonb)
         on conflict (id) do nothing returning id`,
        [JSON.stringify(claims)],
      )).map((r) => r.id));
      const history = claims.filter((c) => inserted.has(c.id)).map((c) => ({
        claim_id: c.id, seq: 1, account_id: c.account_id, event: 'ADD', successor_content: c.content, successor_revision: c.head_revision,
        reason: c.state === 'pending_review' ? 'derived; held for review' : 'derived from a session message', valid_from: c.valid_from,
        marker: historyMarker(c.id, 1, 'ADD', c.head_revision),
      }));
      if (history.length) {
        await bound(
          tx,
          `insert into memory_claim_history (claim_id, seq, account_id, event, prior_content, successor_content, prior_revision,
             successor_revision, reason, valid_from, marker)
           select claim_id, seq, account_id, event, null, successor_content, null, successor_revision, reason, valid_from, marker
             from jsonb_populate_recordset(null::memory_claim_history, ?::jsonb)
           on conflict do nothing`,
          [JSON.stringify(history)],
        );
      }
    }
    const succeeded = ends.filter((e) => e.status === 'succeeded').map((e) => e.id);
    if (succeeded.length && !vectors) await bound(tx, 'update memory_message set available = true where event_id = any(?::uuid[])', [succeeded]);
    if (succeeded.length && vectors) {
      const ok = new Set(succeeded);
      const ms = adds.filter((a) => ok.has(a.ev.id)).flatMap((a) => a.messages);
      await bound(
        tx,
        `update memory_message m set available = true, embedding = decode(v.vector, 'hex'), embedding_model = case when v.vector is null then null else ? end
           from unnest(?::uuid[], ?::text[]) v(id, vector) where m.id = v.id`,
        [vectors.model, ms.map((m) => m.id), ms.map((m) => toHex(vectors.byMessage.get(m.id)))],
      );
    }
    await bound(
      tx,
      `update memory_event e set status = u.status, completed_at = now(), outcome = u.outcome, failure = u.failure
         from jsonb_to_recordset(?::jsonb) as u(id uuid, status text, outcome jsonb, failure jsonb)
        where e.id = u.id and e.status in ('queued', 'running')`,
      [JSON.stringify(ends)],
    );
    return ends;
  });
}
