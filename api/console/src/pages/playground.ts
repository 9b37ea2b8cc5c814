import { useState } from 'preact/hooks';
import { call, type Json } from '../lib/api.ts';
import { errorNotice, html, NoticeView, PageTitle, type Notice } from '../lib/ui.ts';

// The answers playground on POST /v1/account/answers/query (browser session). The inner shapes of
// evidence, citations, gaps and limitations are not fixed by the contract, so they are rendered from
// what the JSON holds: a main text, a title, the citation handle (`cit_…`) and the other scalar fields.

const TEXT_FIELDS = ['text', 'content', 'snippet', 'excerpt', 'quote', 'body', 'message', 'description', 'reason'];
const TITLE_FIELDS = ['title', 'sourceTitle', 'label', 'url', 'sourceUrl', 'filename'];
const HANDLE = /^cit_[A-Za-z0-9_-]+$/;

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const pick = (o: Json, fields: string[]) => fields.map((f) => o?.[f]).find((v) => typeof v === 'string' && v.trim() !== '') as string | undefined;

/** The citation handles an item carries (a `cit_…` string in any top-level field or string array). */
export function handlesOf(item: unknown): string[] {
  if (typeof item === 'string') return HANDLE.test(item) ? [item] : [];
  if (!isObj(item)) return [];
  const out: string[] = [];
  for (const v of Object.values(item)) {
    if (typeof v === 'string' && HANDLE.test(v)) out.push(v);
    if (Array.isArray(v)) for (const x of v) if (typeof x === 'string' && HANDLE.test(x)) out.push(x);
  }
  return [...new Set(out)];
}

function Fields({ item, skip }: { item: Json; skip: string[] }) {
  if (!isObj(item)) return null;
  const rows = Object.entries(item).filter(
    ([k, v]) => !skip.includes(k) && (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') && !HANDLE.test(String(v)),
  );
  if (rows.length === 0) return null;
  return html`<dl class="fields">${rows.map(([k, v]) => html`<div><dt>${k}</dt><dd>${String(v)}</dd></div>`)}</dl>`;
}

function Item({ item }: { item: Json }) {
  if (typeof item === 'string') return html`<p>${item}</p>`;
  // Where a record came from is often a nested object (origin: source, message, claim, …).
  const origin = isObj(item.origin) ? item.origin : null;
  const text = pick(item, TEXT_FIELDS);
  const title = pick(item, TITLE_FIELDS) ?? pick(origin, TITLE_FIELDS);
  return html`${title ? html`<p class="item-title">${title}</p>` : null}
    ${text ? html`<blockquote>${text}</blockquote>` : null}
    <${Fields} item=${item} skip=${[...TEXT_FIELDS, ...TITLE_FIELDS]} />
    ${origin ? html`<${Fields} item=${origin} skip=${TITLE_FIELDS} />` : null}
    ${!text && !title ? html`<pre class="json">${JSON.stringify(item, null, 2)}</pre>` : null}`;
}

function List({ title, items }: { title: string; items: Json }) {
  if (!Array.isArray(items) || items.length === 0) return null;
  return html`<section><h3>${title}</h3><ul class="plain">${items.map((x) => html`<li class="card small"><${Item} item=${x} /></li>`)}</ul></section>`;
}

/** Evidence on the left, each with the citations that point at it on the right. */
function EvidenceWithCitations({ evidence, citations }: { evidence: Json[]; citations: Json[] }) {
  const byHandle = new Map<string, Json[]>();
  for (const c of citations) for (const h of handlesOf(c)) byHandle.set(h, [...(byHandle.get(h) ?? []), c]);
  const placed = new Set<Json>();
  const rows = evidence.map((e, i) => {
    const handles = handlesOf(e);
    const cited = handles.flatMap((h) => byHandle.get(h) ?? []);
    for (const c of cited) placed.add(c);
    return { e, i, handles, cited };
  });
  const loose = citations.filter((c) => !placed.has(c));
  return html`<section aria-labelledby="evidence-title">
    <h2 id="evidence-title">Evidence and citations</h2>
    ${evidence.length === 0 ? html`<p class="muted">No evidence was returned.</p>` : null}
    <ol class="evidence">${rows.map(
      (r) => html`<li class="evidence-row" id=${r.handles[0] ? `ev-${r.handles[0]}` : `ev-${r.i}`}>
        <div class="evidence-body"><span class="ev-num" aria-hidden="true">${r.i + 1}</span><div><${Item} item=${r.e} /></div></div>
        <aside class="evidence-cites" aria-label=${`Citations of evidence ${r.i + 1}`}>
          ${r.handles.map((h) => html`<code class="tag cite">${h}</code>`)}
          ${r.cited.map((c) => html`<div class="cite-detail"><${Fields} item=${c} skip=${[]} /></div>`)}
          ${r.handles.length === 0 ? html`<span class="muted">not citable</span>` : null}
        </aside>
      </li>`,
    )}</ol>
    ${loose.length ? html`<h3>Other citations</h3><ul class="plain">${loose.map((c) => html`<li class="card small"><${Item} item=${c} /></li>`)}</ul>` : null}
  </section>`;
}

/** Each conflict: its topic and the disagreeing statements, each linked to its evidence. */
function Conflicts({ conflicts, numbers }: { conflicts: Json; numbers: Map<string, number> }) {
  if (!Array.isArray(conflicts) || conflicts.length === 0) return null;
  return html`<section aria-labelledby="conflicts-title">
    <h3 id="conflicts-title">Conflicts</h3>
    <p class="hint">The evidence disagrees; none of these statements is confirmed.</p>
    <ul class="plain">${conflicts.map((c: Json) => html`<li class="card small conflict-item">
      <p class="item-title">${String(c.topic ?? '')}</p>
      <ul>${(Array.isArray(c.statements) ? c.statements : []).map((text: string, i: number) => {
        const handle = c.citationHandles?.[i];
        return html`<li>${text} ${handle ? html`<${CiteLink} handle=${handle} number=${numbers.get(handle)} />` : null}</li>`;
      })}</ul>
    </li>`)}</ul>
  </section>`;
}

/** A citation handle as a link to the evidence it cites (numbered like the evidence list). */
const CiteLink = ({ handle, number }: { handle: string; number: number | undefined }) =>
  number === undefined
    ? html`<code class="tag">${handle}</code>`
    : html`<a class="cite" href=${`#ev-${handle}`} aria-label=${`evidence ${number}`}>[${number}]</a>`;

/**
 * The answer: sentence by sentence with links to the evidence each cites when the answer lists its
 * sentences, otherwise its text with any `cit_…` markers turned into such links.
 */
function AnswerText({ answer, numbers }: { answer: Json; numbers: Map<string, number> }) {
  if (Array.isArray(answer.sentences) && answer.sentences.length > 0) {
    return html`<p class="answer-text">${answer.sentences.map(
      (s: Json) => html`<span class=${s.note ? 'sentence note' : 'sentence'}>${String(s.text ?? '')}${' '}${(Array.isArray(s.citations) ? s.citations : []).map(
        (h: string) => html`<${CiteLink} handle=${h} number=${numbers.get(h)} /> `,
      )}</span> `,
    )}</p>`;
  }
  const text = pick(answer, ['text', 'answer', 'content', 'markdown']) ?? '';
  return html`<p class="answer-text">${text.split(/(cit_[A-Za-z0-9_-]+)/g).map((p) =>
    HANDLE.test(p) ? html`<${CiteLink} handle=${p} number=${numbers.get(p)} />` : p,
  )}</p>`;
}

/** A QueryResult with its credit headers (also the memory page's search). */
export function QueryResultView({ r, credits }: { r: Json; credits: Record<string, string> }) {
  const evidence: Json[] = Array.isArray(r.evidence) ? r.evidence : [];
  const citations: Json[] = Array.isArray(r.citations) ? r.citations : [];
  const numbers = new Map<string, number>();
  evidence.forEach((e, i) => handlesOf(e).forEach((h) => numbers.set(h, i + 1)));
  const coverage = typeof r.coverage === 'string' ? r.coverage : isObj(r.coverage) ? r.coverage.status : undefined;
  return html`<section class="result" aria-labelledby="result-title">
    <h2 id="result-title" tabindex="-1">Result</h2>
    <dl class="stats compact">
      <div><dt>Mode</dt><dd>${r.mode}</dd></div>
      <div><dt>Execution</dt><dd>${String(r.execution ?? '—')}</dd></div>
      <div><dt>Preset</dt><dd>${r.resolvedPreset ?? r.requestedPreset ?? '—'}</dd></div>
      ${r.stopReason ? html`<div><dt>Stop reason</dt><dd>${String(r.stopReason)}</dd></div>` : null}
      ${typeof coverage === 'string' ? html`<div><dt>Coverage</dt><dd>${coverage}</dd></div>` : null}
      ${credits.cost !== undefined ? html`<div><dt>Credits used</dt><dd>${credits.cost}</dd></div>` : null}
      ${credits.remaining !== undefined ? html`<div><dt>Credits left</dt><dd>${credits.remaining}</dd></div>` : null}
    </dl>
    ${r.mode === 'answer' && !r.answer
      ? html`<p class="notice info" role="status">${r.execution === 'provider_required'
          ? 'No answer provider is configured on this service, so no answer was generated. The evidence below is what an answer would cite.'
          : 'The answer provider failed (degraded); this is not a lack of evidence.'}</p>`
      : null}
    ${isObj(r.answer)
      ? html`<section class="card answer" aria-labelledby="answer-title">
          <h2 id="answer-title">Answer <span class=${`status ${r.answer.disposition}`}>${String(r.answer.disposition ?? '')}</span></h2>
          <${AnswerText} answer=${r.answer} numbers=${numbers} />
          <${Fields} item=${r.answer} skip=${['text', 'answer', 'content', 'markdown', 'disposition']} />
        </section>`
      : null}
    ${isObj(r.context) && typeof r.context.text === 'string'
      ? html`<details class="card"><summary>Context text (${r.context.text.length} characters)</summary><pre class="context">${r.context.text}</pre></details>`
      : null}
    <${EvidenceWithCitations} evidence=${evidence} citations=${citations} />
    <${List} title="Gaps" items=${r.gaps} />
    <${List} title="Limitations" items=${r.limitations} />
    <${Conflicts} conflicts=${r.conflicts} numbers=${numbers} />
    <details><summary>Full JSON response</summary><pre class="json">${JSON.stringify(r, null, 2)}</pre></details>
  </section>`;
}

/**
 * A query form and its result, on POST /v1/account/answers/query. `scope` narrows it (the memory page
 * passes the peer: `peer_ids`); every run has a fresh idempotency key and spends like an API call.
 */
export function QueryRunner({ id, label, scope = {} }: { id: string; label: string; scope?: Json }) {
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<{ r: Json; credits: Record<string, string> } | null>(null);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    const preset = String(form.get('preset'));
    setBusy(true);
    setNotice(null);
    try {
      const res = await call('POST', '/v1/account/answers/query', {
        idempotencyKey: `console-${crypto.randomUUID()}`,
        mode: String(form.get('mode')),
        query: String(form.get('query')),
        ...(preset ? { preset } : {}),
        ...scope,
      });
      const h = (n: string) => res.headers.get(n) ?? undefined;
      const credits = Object.fromEntries(
        Object.entries({ cost: h('x-service-credit-cost'), remaining: h('x-service-credit-remaining') }).filter(([, v]) => v !== undefined),
      ) as Record<string, string>;
      setResult({ r: res.body, credits });
      requestAnimationFrame(() => document.getElementById('result-title')?.focus());
    } catch (err) {
      setNotice(errorNotice(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<form onSubmit=${submit} class="card">
      <label for=${`${id}-query`}>${label}</label>
      <textarea id=${`${id}-query`} name="query" rows="3" required maxlength="4000"></textarea>
      <div class="row">
        <div><label for=${`${id}-mode`}>Mode</label>
          <select id=${`${id}-mode`} name="mode">
            <option value="answer">answer (cited answer)</option>
            <option value="context">context</option>
            <option value="evidence">evidence</option>
          </select></div>
        <div><label for=${`${id}-preset`}>Preset</label>
          <select id=${`${id}-preset`} name="preset">
            <option value="">default</option>
            <option value="accuracy">accuracy</option>
            <option value="efficient">efficient</option>
          </select></div>
      </div>
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Running…' : 'Run'}</button>
    </form>
    <${NoticeView} notice=${notice} />
    ${result ? html`<${QueryResultView} r=${result.r} credits=${result.credits} />` : null}`;
}

export function PlaygroundPage() {
  return html`<${PageTitle}>Answers playground</${PageTitle}>
    <p>Ask your sources and memory a question as your account. Each run spends query quota and credits like an API call.</p>
    <${QueryRunner} id="pg" label="Question" />`;
}
