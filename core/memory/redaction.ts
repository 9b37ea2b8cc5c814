import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { Principal } from '../auth/principal.ts';
import { notFound } from '../../platform/errors.ts';
import { forgetResultsCiting } from '../query/operations.queries.ts';
import { changeHash, endClaim } from './claims.ts';
import { changeTime, claimsCiting, scrubDerivedText } from './claims.queries.ts';
import { isUuid } from './events.ts';
import { requireLabel } from './labels.ts';
import { messageToRedact, redactRow, type MessageRow, type Redactor } from './messages.queries.ts';
import { iso } from './pagination.ts';

// Redacting one message (a person's decision, synchronous): its text goes from the row, from every read
// and from the search index copies, the claims derived from it end (withdrawn, each with a DELETE entry
// in its history; the text they took from it is removed, a person's corrections stay), and what is kept
// says who redacted it, when and why. Deleting the row instead would lose the claims' history.

/** Who the redaction is recorded as: the API key or connected application, or in the console the person. */
const redactorOf = (p: Principal): Redactor => ({ credential: p.kind, id: p.kind === 'browser' ? p.email : p.credentialId });

function receipt(m: MessageRow, session: string, withdrawn: string[], replayed: boolean) {
  return {
    schemaVersion: 'service-memory-message-redaction-v1' as const,
    message_id: m.id,
    session_id: session,
    redacted_at: iso(m.redacted_at)!,
    redacted_by: m.redacted_by!,
    reason: m.redaction_reason ?? '',
    withdrawn_claims: withdrawn,
    replayed,
  };
}

/**
 * DELETE sessions/{s}/messages/{message_id}. Redacting a message already redacted changes nothing and
 * returns the first redaction (replayed), with the claims it withdrew (those that ended at that time).
 */
export async function redactMessage(em: Em, principal: Principal, at: { s: string; message_id: string }, req: { reason: string }) {
  return em.transactional(async (tx) => {
    const session = await requireLabel(tx, principal, 'session', at.s);
    const msg = isUuid(at.message_id) ? await messageToRedact(tx, principal, session.id, at.message_id) : undefined;
    if (!msg) throw notFound('No message with this id in this session.');
    const claims = await claimsCiting(tx, principal.accountId, msg.id);
    if (msg.redacted_at) {
      const ended = claims.filter((c) => iso(c.valid_to) === iso(msg.redacted_at)).map((c) => c.id);
      return receipt(msg, session.label, ended, true);
    }
    const now = await changeTime(tx);
    const reason = `The message it was derived from was redacted: ${req.reason}`;
    const withdrawn: string[] = [];
    for (const claim of claims) {
      if (claim.state === 'withdrawn') continue;
      const content = claim.authority === 'correction_memory' ? claim.content : '';
      await endClaim(tx, principal, { ...claim, content }, { reason, hash: changeHash('DELETE', null, reason), at: now });
      withdrawn.push(claim.id);
    }
    await scrubDerivedText(tx, claims.map((c) => c.id));
    const by = redactorOf(principal);
    await redactRow(tx, msg.id, { at: now, by, reason: req.reason });
    await forgetResultsCiting(tx, principal.accountId, msg.id);
    return receipt({ ...msg, redacted_at: now, redacted_by: by, redaction_reason: req.reason }, session.label, withdrawn, false);
  });
}
