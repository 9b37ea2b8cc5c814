import { useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, call, get, post, type Json } from '../lib/api.ts';
import { errorNotice, html, NoticeView, Time, type Notice } from '../lib/ui.ts';

// A claim as people review it: what it says, whether it is supported or conflicting, what it cites
// (the message span it was derived from, or the person's correction), when it is valid, its history,
// and the two guarded changes: correct (also how a pending_review proposal is accepted) and withdraw
// (also how one is rejected). Both send the claim's head_revision: a change made meanwhile elsewhere is
// refused with 409 revision_conflict and the card shows the claim's current version.

/** The console's account-scoped mount of the native-memory routes (browser session, CSRF on writes). */
export const MEMORY = '/v1/account/memory/workspaces/default';

const enc = encodeURIComponent;
const STATE_LABEL: Record<string, string> = { current: 'current', pending_review: 'awaiting review', withdrawn: 'withdrawn' };
const SUPPORT_LABEL: Record<string, string> = { supported: 'supported', conflicting: 'conflicting', user_asserted: 'asserted by a person' };

function Citation({ c }: { c: Json }) {
  if (c.kind === 'correction') {
    return html`<li><blockquote>“${c.quote}”</blockquote>
      <span class="hint">Correction on <${Time} iso=${c.at} />${c.reason ? html`: ${c.reason}` : null}</span></li>`;
  }
  return html`<li><blockquote>“${c.quote}”</blockquote>
    <span class="hint">Message in session <a href=${`/memory?session=${enc(c.session_id ?? '')}`} data-nav="1">${c.session_id}</a>,
      characters ${c.start}–${c.end}</span></li>`;
}

function History({ id }: { id: string }) {
  const [entries, setEntries] = useState<Json[] | null>(null);
  const [notice, setNotice] = useState<Notice>(null);
  const load = async () => {
    try {
      setEntries((await get(`${MEMORY}/claims/${id}/history`)).entries);
    } catch (err) {
      setNotice(errorNotice(err));
    }
  };
  return html`<details onToggle=${(e: Event) => (e.currentTarget as HTMLDetailsElement).open && !entries && void load()}>
    <summary>History</summary>
    <${NoticeView} notice=${notice} />
    ${entries
      ? html`<ol class="history">${entries.map(
          (h) => html`<li><strong>${h.event}</strong> <${Time} iso=${h.at} />${h.reason ? html` — ${h.reason}` : null}
            ${h.prior ? html`<div class="hint">was: “${h.prior.content}”</div>` : null}
            ${h.successor ? html`<div>${h.event === 'ADD' ? 'said' : 'now'}: “${h.successor.content}”</div>` : null}</li>`,
        )}</ol>`
      : html`<p class="muted" role="status">Loading…</p>`}
  </details>`;
}

/** What a claim says about itself: state, support, whom it is about, validity, conflicts and citations. */
function ClaimFacts({ claim }: { claim: Json }) {
  return html`<p class="badges">
      <span class=${`tag state-${claim.state}`}>${STATE_LABEL[claim.state] ?? claim.state}</span>
      <span class=${`tag support-${claim.support_status}`}>${SUPPORT_LABEL[claim.support_status] ?? claim.support_status}</span>
      <span class="tag">${claim.authority === 'correction_memory' ? 'corrected' : 'inferred'}</span>
      <span class="hint">about <a href=${`/memory?peer=${enc(claim.peer_id)}`} data-nav="1">${claim.peer_id}</a></span>
    </p>
    ${claim.warning ? html`<p class="notice error" role="note">${claim.warning}</p>` : null}
    <dl class="fields">
      <div><dt>Valid from</dt><dd><${Time} iso=${claim.valid_from} /></dd></div>
      <div><dt>until</dt><dd>${claim.valid_to ? html`<${Time} iso=${claim.valid_to} />` : 'now'}</dd></div>
      <div><dt>Categories</dt><dd>${claim.categories.join(', ') || '—'}</dd></div>
      <div><dt>Head revision</dt><dd class="mono">${claim.head_revision}</dd></div>
    </dl>
    ${claim.conflicts_with.length
      ? html`<p class="conflict" role="note">Conflicts with ${claim.conflicts_with.length === 1 ? 'another claim' : `${claim.conflicts_with.length} other claims`}:
          neither is confirmed. Correct the one that is right, or withdraw the wrong one.</p>`
      : null}
    <h4>Cites</h4>
    ${claim.citations.length ? html`<ul class="plain citations">${claim.citations.map((c: Json) => html`<${Citation} c=${c} />`)}</ul>` : html`<p class="muted">No citation.</p>`}`;
}

type Mode = null | 'correct' | 'withdraw';

/**
 * One claim with its actions. `review`: the claim is a pending_review proposal, so "correct" reads
 * "Accept" and "withdraw" reads "Reject". `onChanged` is told what happened so the list can update.
 */
export function ClaimCard({ claim: given, review = false, onChanged }: { claim: Json; review?: boolean; onChanged: (what: string) => void }) {
  const [mode, setMode] = useState<Mode>(null);
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  // The claim as last read: replaced by its current version when a change made elsewhere wins (409).
  const [fresh, setFresh] = useState<Json>(null);
  const claim = fresh ?? given;
  // Keyboard focus follows the form: into its first field when it opens, back to the button that opened it when it closes.
  const card = useRef<HTMLElement>(null);
  const opener = useRef<string | null>(null);
  useEffect(() => {
    if (mode) card.current?.querySelector<HTMLElement>('form textarea, form input')?.focus();
    else if (opener.current) card.current?.querySelector<HTMLElement>(`[data-focus="${opener.current}"]`)?.focus();
  }, [mode]);
  const open = (m: Mode) => {
    opener.current = m;
    setMode(m);
  };
  const close = (focus: string) => {
    opener.current = focus;
    setMode(null);
  };
  const titleId = `claim-${claim.id}`;
  const verbs = review ? { correct: 'Accept', withdraw: 'Reject' } : { correct: 'Correct', withdraw: 'Withdraw' };
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const reason = String(form.get('reason'));
    setBusy(true);
    try {
      if (mode === 'correct') {
        await call('PUT', `${MEMORY}/claims/${claim.id}`, { content: String(form.get('content')), head_revision: claim.head_revision, reason });
        onChanged(review ? `Accepted “${String(form.get('content'))}”.` : `Corrected: “${String(form.get('content'))}”.`);
      } else {
        await call('DELETE', `${MEMORY}/claims/${claim.id}`, { head_revision: claim.head_revision, reason });
        onChanged(review ? `Rejected “${claim.content}”.` : `Withdrew “${claim.content}”.`);
      }
      close('title');
    } catch (err) {
      if (err instanceof ApiError && err.code === 'revision_conflict') {
        // Someone changed the claim meanwhile: show what it says now, and let the person decide again.
        setFresh(await get(`${MEMORY}/claims/${claim.id}`).catch(() => null));
        setNotice({ kind: 'error', text: 'This claim was changed elsewhere after you opened it. Its current version is shown; review it and try again.' });
        close('title');
      } else {
        setNotice(errorNotice(err));
      }
    } finally {
      setBusy(false);
    }
  };
  const active = claim.state !== 'withdrawn';
  return html`<article ref=${card} class=${`card claim ${claim.support_status}`} aria-labelledby=${titleId}>
    <h3 id=${titleId} class="claim-content" tabindex="-1" data-focus="title">${claim.content}</h3>
    <${ClaimFacts} claim=${claim} />
    <${History} id=${claim.id} />
    <${NoticeView} notice=${notice} />
    ${active && mode === null
      ? html`<div class="actions">
          <button type="button" data-focus="correct" onClick=${() => open('correct')} aria-label=${`${verbs.correct}: ${claim.content}`}>${verbs.correct}</button>
          <button type="button" class="danger" data-focus="withdraw" onClick=${() => open('withdraw')} aria-label=${`${verbs.withdraw}: ${claim.content}`}>${verbs.withdraw}</button>
        </div>`
      : null}
    ${mode
      ? html`<form onSubmit=${submit} aria-label=${`${verbs[mode]} this claim`}>
          ${mode === 'correct'
            ? html`<label for=${`content-${claim.id}`}>${review ? 'What is true (accepted as written, or edited)' : 'Corrected statement'}</label>
                <textarea id=${`content-${claim.id}`} name="content" rows="2" required maxlength="4000" defaultValue=${claim.content}></textarea>`
            : null}
          <label for=${`reason-${claim.id}`}>Reason</label>
          <input id=${`reason-${claim.id}`} name="reason" required maxlength="500"
            placeholder=${mode === 'correct' ? 'e.g. confirmed with the user' : 'e.g. no longer true'} />
          <div class="actions">
            <button type="submit" class=${mode === 'withdraw' ? 'danger' : 'primary'} disabled=${busy}>${verbs[mode]}</button>
            <button type="button" onClick=${() => close(mode)}>Cancel</button>
          </div>
        </form>`
      : null}
  </article>`;
}

/** One page of claims (POST …/claims/list): a state, optionally of one peer. */
export const listClaims = (body: { state: string; peer_id?: string }, cursor: string | null) =>
  post(`${MEMORY}/claims/list`, { ...body, limit: 20, ...(cursor ? { cursor } : {}) });
