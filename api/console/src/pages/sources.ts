import { useEffect, useState } from 'preact/hooks';
import { del, get, post, type Json } from '../lib/api.ts';
import { errorNotice, html, Loadable, NoticeView, PageTitle, Time, useLoad, type Notice } from '../lib/ui.ts';

// Sources and ingest from the browser: preview a URL or a file (the dry-run plan; nothing is stored),
// queue it, watch its job to the end; the sources and jobs of the account; delete a source. All through
// the console's account-scoped ingest routes (/v1/account/ingest/…, /v1/account/sources/…).

const ACTIVE = new Set(['queued', 'running']);
const TERMINAL = new Set(['succeeded', 'failed', 'quarantined']);
const label = (x: Json) => x.title || x.url || x.sourceUrl || x.filename || x.id;
const MAX_FILE_BYTES = 50_000_000;
const TYPES: Record<string, string> = {
  pdf: 'application/pdf', md: 'text/markdown', markdown: 'text/markdown', txt: 'text/plain', text: 'text/plain',
  html: 'text/html', htm: 'text/html', json: 'application/json',
};
const today = () => new Date().toLocaleDateString('en-CA'); // YYYY-MM-DD, the local day

/** Seconds as "42 s" or "3 min 5 s". */
const elapsed = (fromIso: string) => {
  const seconds = Math.max(0, Math.round((Date.now() - Date.parse(fromIso)) / 1000));
  return seconds < 60 ? `${seconds} s` : `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
};

/**
 * A job's state in words: the public status stays `queued` until the end, so a started job says how
 * long it has been processing, and a waiting one its place in the account's own line.
 */
function JobState({ job }: { job: Json }) {
  const running = job.status === 'queued' && job.startedAt;
  const word = running ? 'processing' : job.status;
  return html`<span class=${`status ${running ? 'running' : job.status}`}>${word}</span>${running
    ? html` <span class="hint">for ${elapsed(job.startedAt)}${job.attempts > 1 ? `, attempt ${job.attempts}` : ''}</span>`
    : job.queuePosition
      ? html` <span class="hint">${job.queuePosition === 1 ? 'next in your line' : `${job.queuePosition - 1} of your jobs ahead`}</span>`
      : null}`;
}

/** The file's bytes as base64 (a data: URL read by the browser, without its prefix). */
const base64Of = (file: File) =>
  new Promise<string>((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result).replace(/^data:[^,]*,/, ''));
    reader.onerror = () => reject(reader.error ?? new Error('The file could not be read.'));
    reader.readAsDataURL(file);
  });

function Plan({ plan }: { plan: Json }) {
  return html`<section class="card plan" aria-labelledby="plan-title">
    <h3 id="plan-title">Preview (nothing was stored)</h3>
    <p>${plan.summary}</p>
    <dl class="fields">
      <div><dt>Source excerpts</dt><dd>${plan.records.sourceExcerpts}</dd></div>
      <div><dt>Facts</dt><dd>${plan.records.facts}</dd></div>
      <div><dt>Links</dt><dd>${plan.records.links}</dd></div>
      <div><dt>Records</dt><dd>${plan.records.total}</dd></div>
      <div><dt>Estimated credits</dt><dd>${plan.estimatedCredits}</dd></div>
    </dl>
    ${plan.warnings.length ? html`<ul>${plan.warnings.map((w: string) => html`<li class="hint">${w}</li>`)}</ul>` : null}
    ${plan.recognisedText?.length
      ? html`<details open>
          <summary>Recognised text (OCR) of ${plan.recognisedText.length} ${plan.recognisedText.length === 1 ? 'page' : 'pages'}</summary>
          <p class="hint">Recognising the pages spent credits; queueing these same bytes reuses this text and charges nothing twice.</p>
          ${plan.recognisedText.map((p: Json) => html`<figure class="ocr-page">
            <figcaption>Page ${p.page} <span class="hint">(confidence ${Math.round(p.confidence)}%)</span></figcaption>
            <pre class="wrap">${p.text || '(no text found on this page)'}</pre>
          </figure>`)}
        </details>`
      : null}
  </section>`;
}

/** Follows a job (GET /v1/account/ingest/jobs/{id}) until it ends; says each status as it changes. */
function JobProgress({ jobId, onEnd }: { jobId: string; onEnd: () => void }) {
  const [job, setJob] = useState<Json>(null);
  const [error, setError] = useState<Notice>(null);
  useEffect(() => {
    let stop = false;
    const poll = async () => {
      try {
        const j = (await get(`/v1/account/ingest/jobs/${jobId}`)).job;
        if (stop) return;
        setJob(j);
        if (TERMINAL.has(j.status)) return onEnd();
      } catch (err) {
        setError(errorNotice(err));
      }
      if (!stop) setTimeout(() => void poll(), 1000);
    };
    void poll();
    return () => {
      stop = true;
    };
  }, [jobId]);
  return html`<section class="card" aria-labelledby="job-title">
    <h3 id="job-title">Ingest job <span class="mono hint">${jobId}</span></h3>
    <${NoticeView} notice=${error} />
    <p role="status">${job
      ? html`Status: <${JobState} job=${job} />
          ${job.status === 'succeeded' && job.records ? html` — ${job.records.total} records from “${label(job)}”.` : null}`
      : 'Queued; waiting for the first status…'}</p>
    ${job?.failure ? html`<p class="failure" role="alert"><strong>Failed:</strong> ${job.failure.message}</p>` : null}
  </section>`;
}

/** The fields of a URL or a file source. */
function SourceFields({ kind }: { kind: 'url' | 'file' }) {
  return kind === 'url'
    ? html`<label for="src-url">URL</label><input id="src-url" name="url" type="url" required placeholder="https://example.com/notes" />`
    : html`<label for="src-file">File</label><input id="src-file" name="file" type="file" required aria-describedby="file-hint" accept=".pdf,.md,.markdown,.txt,.html,.htm,.json" />
        <p class="hint" id="file-hint">Previewing a scanned PDF (pages without a text layer) recognises its pages by OCR, which
          spends credits per page; other previews are free.</p>
        <label for="src-type">Content type</label>
        <select id="src-type" name="contentType">
          <option value="">from the file name</option>
          ${[...new Set(Object.values(TYPES))].map((t) => html`<option value=${t}>${t}</option>`)}
        </select>`;
}

/** Add a source: a URL or a file; preview its plan, then queue it and watch the job. */
function AddSource({ onQueued }: { onQueued: () => void }) {
  const [kind, setKind] = useState<'url' | 'file'>('url');
  const [request, setRequest] = useState<Json>(null);
  const [plan, setPlan] = useState<Json>(null);
  const [jobId, setJobId] = useState<string | null>(null);
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const route = kind === 'url' ? '/v1/account/ingest/url' : '/v1/account/ingest/file';
  const preview = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    setNotice(null);
    setPlan(null);
    setJobId(null);
    try {
      let body: Json;
      if (kind === 'url') body = { url: String(form.get('url')) };
      else {
        const file = form.get('file') as File;
        if (!file?.name) throw new Error('Choose a file first.');
        if (file.size > MAX_FILE_BYTES) throw new Error(`${file.name} has ${file.size} bytes; files may have at most ${MAX_FILE_BYTES}.`);
        const contentType = String(form.get('contentType') || TYPES[file.name.split('.').pop()?.toLowerCase() ?? ''] || '');
        if (!contentType) throw new Error('Choose the content type: it cannot be told from the file name.');
        body = { filename: file.name, contentType, contentBase64: await base64Of(file) };
      }
      setPlan((await post(route, { ...body, dryRun: true })).plan);
      // One idempotency key per previewed source: queueing twice returns the same job.
      setRequest({ ...body, idempotencyKey: `console-${crypto.randomUUID()}` });
    } catch (err) {
      setNotice(errorNotice(err));
    } finally {
      setBusy(false);
    }
  };
  const queue = async (event: SubmitEvent) => {
    event.preventDefault();
    const datedAt = String(new FormData(event.currentTarget as HTMLFormElement).get('datedAt'));
    setBusy(true);
    try {
      const r = await post(route, { ...request, dryRun: false, datedAt });
      setJobId(r.job.id);
      setPlan(null);
      onQueued();
    } catch (err) {
      setNotice(errorNotice(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card" aria-labelledby="add-title">
    <h2 id="add-title">Add a source</h2>
    <fieldset class="inline">
      <legend>From</legend>
      <label class="check"><input type="radio" name="source-kind" checked=${kind === 'url'} onChange=${() => setKind('url')} /> a URL</label>
      <label class="check"><input type="radio" name="source-kind" checked=${kind === 'file'} onChange=${() => setKind('file')} /> a file</label>
    </fieldset>
    <form onSubmit=${preview}>
      <${SourceFields} kind=${kind} />
      <button type="submit" disabled=${busy}>${busy && !plan ? 'Previewing…' : 'Preview'}</button>
    </form>
    <${NoticeView} notice=${notice} />
    ${plan
      ? html`<${Plan} plan=${plan} />
        <form onSubmit=${queue}>
          <label for="src-dated">Dated</label>
          <input id="src-dated" name="datedAt" type="date" required value=${today()} aria-describedby="dated-hint" />
          <p id="dated-hint" class="hint">The day the content is about or was published; queries weigh recent content higher.</p>
          <button type="submit" class="primary" disabled=${busy}>Queue it</button>
        </form>`
      : null}
    ${jobId ? html`<${JobProgress} key=${jobId} jobId=${jobId} onEnd=${onQueued} />` : null}
  </section>`;
}

/** Sources and ingest jobs from GET /v1/account/overview; DELETE /v1/account/sources/{id} queues a deletion. */
export function SourcesPage() {
  const [state, reload] = useLoad(() => get('/v1/account/overview?sourceLimit=100&ingestJobLimit=50'));
  const [notice, setNotice] = useState<Notice>(null);
  // While a job is queued or running, refresh every few seconds so its status and failure show up.
  const busy = (state.data?.ingestJobs ?? []).some((j: Json) => ACTIVE.has(j.status));
  useEffect(() => {
    if (!busy) return;
    const t = setInterval(() => void reload(), 3000);
    return () => clearInterval(t);
  }, [busy]);

  const remove = async (s: Json) => {
    if (!confirm(`Delete “${label(s)}” and everything extracted from it?`)) return;
    try {
      const r = await del(`/v1/account/sources/${s.id}`);
      setNotice({ kind: 'success', text: `Deletion of “${label(s)}” is ${r.job.status} (job ${r.job.id}).` });
      await reload();
    } catch (err) {
      setNotice(errorNotice(err));
    }
  };

  return html`<${PageTitle}>Sources and ingest jobs</${PageTitle}>
    <p>Add a web page or a file here, or from your applications with an API key (<code>POST /v1/ingest/url</code>, <code>/v1/ingest/file</code>)
      or <code>cairn ingest</code>.</p>
    <${AddSource} onQueued=${reload} />
    <${NoticeView} notice=${notice} />
    <button type="button" onClick=${reload}>Refresh</button>
    <${Loadable} state=${state} retry=${reload}>${(o: Json) => html`
      <section aria-labelledby="sources-title">
        <h2 id="sources-title">Sources <span class="muted">(${o.recordCounts.total} ${o.recordCounts.total === 1 ? 'record' : 'records'})</span></h2>
        ${o.sources.length === 0
          ? html`<p class="muted">No sources yet.</p>`
          : html`<div class="table-wrap"><table>
            <thead><tr><th scope="col">Source</th><th scope="col">Type</th><th scope="col">Status</th><th scope="col">Records</th>
              <th scope="col">Dated</th><th scope="col">Added</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>${o.sources.map(
              (s: Json) => html`<tr key=${s.id}>
                <th scope="row">${label(s)}${s.url && s.title ? html`<div class="hint">${s.url}</div>` : null}</th>
                <td>${s.contentType}</td>
                <td><span class=${`status ${s.status}`}>${s.status}</span>${s.quarantineReason ? html`<div class="hint">${s.quarantineReason}</div>` : null}</td>
                <td>${s.records}</td><td>${s.datedAt ?? '—'}</td><td><${Time} iso=${s.createdAt} /></td>
                <td class="actions"><button type="button" class="danger" onClick=${() => remove(s)} aria-label=${`Delete ${label(s)}`}>Delete</button></td>
              </tr>`,
            )}</tbody></table></div>`}
      </section>
      <section aria-labelledby="jobs-title">
        <h2 id="jobs-title">Ingest jobs</h2>
        ${o.ingestJobs.length === 0
          ? html`<p class="muted">No ingest jobs yet.</p>`
          : html`<div class="table-wrap"><table>
            <thead><tr><th scope="col">Job</th><th scope="col">Kind</th><th scope="col">Status</th><th scope="col">Attempts</th>
              <th scope="col">Created</th><th scope="col">Completed</th></tr></thead>
            <tbody>${o.ingestJobs.map(
              (j: Json) => html`<tr key=${j.id}>
                <th scope="row">${label(j)}<div class="hint mono">${j.id}</div></th>
                <td>${j.kind}</td>
                <td><${JobState} job=${j} />
                  ${j.failure
                    ? html`<div class="failure" role="note"><strong>Failed:</strong> ${j.failure.message}
                        <span class="hint">${j.failure.retryable ? ' (retryable)' : ' (do not resubmit this source yet)'}</span></div>`
                    : null}</td>
                <td>${j.attempts}</td><td><${Time} iso=${j.createdAt} /></td><td><${Time} iso=${j.completedAt} never="—" /></td>
              </tr>`,
            )}</tbody></table></div>`}
      </section>`}
    </${Loadable}>`;
}
