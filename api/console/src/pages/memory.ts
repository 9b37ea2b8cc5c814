import { useState } from 'preact/hooks';
import { del, post, type Json } from '../lib/api.ts';
import { useRoute } from '../lib/router.ts';
import { errorNotice, html, MoreButton, NoticeView, PageTitle, Time, usePaged, type Notice, type Paged } from '../lib/ui.ts';
import { ClaimCard, listClaims, MEMORY } from './claims.ts';
import { QueryRunner } from './playground.ts';

// Native memory as a person sees it: peers and sessions, a session's messages, a peer's claims by
// state (current, awaiting review, withdrawn) with their citations, validity and history, and a search
// over the peer's memory through the query operation. Everything goes through the console's
// account-scoped memory routes with the browser session. A message can be redacted from its session.

const enc = encodeURIComponent;
const page = (path: string) => (cursor: string | null) => post(`${MEMORY}${path}`, { limit: 20, ...(cursor ? { cursor } : {}) });

function Labels({ kind, current }: { kind: 'peer' | 'session'; current: string | null }) {
  const [state, { more }] = usePaged<Json>(page(`/${kind}s/list`), kind);
  const title = kind === 'peer' ? 'Peers' : 'Sessions';
  return html`<section aria-labelledby=${`${kind}s-title`}>
    <h2 id=${`${kind}s-title`}>${title}</h2>
    ${state.error ? html`<${NoticeView} notice=${errorNotice(state.error)} />` : null}
    ${state.items?.length === 0 ? html`<p class="muted">No ${kind}s yet.</p>` : null}
    <ul class="plain labels">${(state.items ?? []).map(
      (l) => html`<li><a href=${`/memory?${kind}=${enc(l.id)}`} data-nav="1" aria-current=${l.id === current ? 'page' : undefined}>${l.id}</a></li>`,
    )}</ul>
    <${MoreButton} state=${state} more=${more} what=${`${kind}s`} />
  </section>`;
}

const STATES = [
  { value: 'current', label: 'Current' },
  { value: 'pending_review', label: 'Awaiting review' },
  { value: 'withdrawn', label: 'Withdrawn' },
];

/** Claims of one state (of one peer, or of all peers), each a card, with a "more" button. */
export function ClaimList({ state, peer, review = false, empty }: { state: string; peer?: string; review?: boolean; empty: string }) {
  const [notice, setNotice] = useState<Notice>(null);
  const [claims, { more, reload }] = usePaged<Json>((cursor) => listClaims({ state, ...(peer ? { peer_id: peer } : {}) }, cursor), `${state}/${peer}`);
  const changed = (what: string) => {
    setNotice({ kind: 'success', text: what });
    void reload();
  };
  return html`<div>
    <${NoticeView} notice=${notice} />
    ${claims.error ? html`<${NoticeView} notice=${errorNotice(claims.error)} />` : null}
    ${claims.items?.length === 0 ? html`<p class="muted">${empty}</p>` : null}
    ${(claims.items ?? []).map((c) => html`<${ClaimCard} key=${c.id} claim=${c} review=${review} onChanged=${changed} />`)}
    <${MoreButton} state=${claims as Paged<unknown>} more=${more} what="claims" />
  </div>`;
}

function PeerView({ peer }: { peer: string }) {
  const [state, setState] = useState('current');
  return html`<section aria-labelledby="peer-title">
    <h2 id="peer-title">Peer ${peer}</h2>
    <section aria-labelledby="claims-title">
      <h3 id="claims-title">Claims</h3>
      <fieldset class="inline">
        <legend>Show</legend>
        ${STATES.map((s) => html`<label class="check"><input type="radio" name="claim-state" value=${s.value} checked=${state === s.value}
          onChange=${() => setState(s.value)} /> ${s.label}</label>`)}
      </fieldset>
      <${ClaimList} key=${state} state=${state} peer=${peer} review=${state === 'pending_review'}
        empty=${`No ${STATES.find((s) => s.value === state)!.label.toLowerCase()} claims about ${peer}.`} />
    </section>
    <section aria-labelledby="search-title">
      <h3 id="search-title">Search</h3>
      <p class="hint">Runs the query operation over ${peer}'s messages and current claims (it spends a query credit).</p>
      <${QueryRunner} id="mem" label=${`Search ${peer}'s memory`} scope=${{ peer_ids: [peer] }} />
    </section>
  </section>`;
}

/**
 * One message of a session. A message held for review (a claim derived from it awaits review or was
 * rejected) is marked: it is never served as context. Redact removes its content for good (the claims
 * citing it are withdrawn, with their history); a redacted message keeps its place, saying who redacted
 * it, when and why.
 */
function MessageCard({ m, session, onRedacted }: { m: Json; session: string; onRedacted: (what: string) => void }) {
  const [open, setOpen] = useState(false);
  const [busy, setBusy] = useState(false);
  const [notice, setNotice] = useState<Notice>(null);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const reason = String(new FormData(event.currentTarget as HTMLFormElement).get('reason'));
    setBusy(true);
    try {
      const r = await del(`${MEMORY}/sessions/${enc(session)}/messages/${m.id}`, { reason });
      const claims = r.withdrawn_claims.length;
      onRedacted(`Redacted the message${claims ? ` and withdrew ${claims === 1 ? 'the claim' : `${claims} claims`} derived from it` : ''}.`);
    } catch (err) {
      setNotice(errorNotice(err));
      setBusy(false);
    }
  };
  const who = (by: Json) => (by.credential === 'browser' ? by.id : `${by.credential === 'apiKey' ? 'API key' : 'application'} ${by.id}`);
  return html`<li class=${`card small message ${m.role}${m.held ? ' held' : ''}`}>
    <p class="hint"><strong>${m.role}</strong> · <a href=${`/memory?peer=${enc(m.peer_id)}`} data-nav="1">${m.peer_id}</a> ·
      <${Time} iso=${m.created_at} />${m.agent_id ? ` · agent ${m.agent_id}` : ''}
      ${m.held && !m.redacted ? html` · <span class="tag state-pending_review">held for review: never used as context</span>` : null}</p>
    ${m.redacted
      ? html`<p class="muted">Redacted by ${who(m.redacted.by)} on <${Time} iso=${m.redacted.at} />: ${m.redacted.reason}</p>`
      : html`<blockquote>${m.content}</blockquote>`}
    <${NoticeView} notice=${notice} />
    ${!m.redacted && !open
      ? html`<div class="actions"><button type="button" class="danger" onClick=${() => setOpen(true)}
          aria-label=${`Redact the message of ${m.peer_id} at ${m.created_at}`}>Redact</button></div>`
      : null}
    ${open && !m.redacted
      ? html`<form onSubmit=${submit} aria-label="Redact this message">
          <p class="hint">Its content is removed for good; the claims derived from it are withdrawn (their history is kept).</p>
          <label for=${`redact-${m.id}`}>Reason</label>
          <input id=${`redact-${m.id}`} name="reason" required maxlength="500" placeholder="e.g. a password pasted by mistake" />
          <div class="actions">
            <button type="submit" class="danger" disabled=${busy}>Redact</button>
            <button type="button" onClick=${() => setOpen(false)}>Cancel</button>
          </div>
        </form>`
      : null}
  </li>`;
}

function SessionView({ session }: { session: string }) {
  const [messages, { more, reload }] = usePaged<Json>(page(`/sessions/${enc(session)}/messages/list`), session);
  const [notice, setNotice] = useState<Notice>(null);
  const redacted = (what: string) => {
    setNotice({ kind: 'success', text: what });
    void reload();
  };
  return html`<section aria-labelledby="session-title">
    <h2 id="session-title">Session ${session}</h2>
    <${NoticeView} notice=${notice} />
    ${messages.error ? html`<${NoticeView} notice=${errorNotice(messages.error)} />` : null}
    ${messages.items?.length === 0 ? html`<p class="muted">No messages in this session yet.</p>` : null}
    <ol class="plain messages">${(messages.items ?? []).map((m) => html`<${MessageCard} key=${m.id} m=${m} session=${session} onRedacted=${redacted} />`)}</ol>
    <${MoreButton} state=${messages} more=${more} what="messages" />
  </section>`;
}

/** /memory: peers and sessions; ?peer= shows a peer's claims and search, ?session= a session's messages. */
export function MemoryPage() {
  const { query } = useRoute();
  const peer = query.get('peer');
  const session = query.get('session');
  return html`<${PageTitle}>Memory</${PageTitle}>
    <p>What your applications recorded: peers, sessions and their messages, and the claims derived from them. Correct a
      claim or withdraw it here; every version stays in its history. Proposals held for review are in the <a href="/memory/review" data-nav="1">review queue</a>.</p>
    <div class="memory-layout">
      <div class="memory-index">
        <${Labels} kind="peer" current=${peer} />
        <${Labels} kind="session" current=${session} />
      </div>
      <div class="memory-detail">
        ${peer ? html`<${PeerView} key=${peer} peer=${peer} />` : null}
        ${session && !peer ? html`<${SessionView} key=${session} session=${session} />` : null}
        ${!peer && !session ? html`<p class="muted">Choose a peer to see and correct what is remembered about them, or a session to read its messages.</p>` : null}
      </div>
    </div>`;
}

/** /memory/review: every pending_review proposal; accept = correct (state what is true), reject = withdraw. */
export function ReviewPage() {
  return html`<${PageTitle}>Review queue</${PageTitle}>
    <p>Claims derived from messages that looked like instructions to a model are held here and never used as context
      until a person accepts them. <strong>Accept</strong> states what is true (edit it if needed) and makes it current; <strong>Reject</strong> withdraws it. Both are kept in the claim's history.
      The message a held claim came from is not used as context either, while it waits and after a rejection; to remove its
      text for good, open its session and <strong>Redact</strong> it.</p>
    <${ClaimList} state="pending_review" review=${true} empty="Nothing is waiting for review." />`;
}
