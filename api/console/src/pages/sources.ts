import { useEffect, useState } from 'preact/hooks';
import { del, get, type Json } from '../api.ts';
import { errorNotice, html, Loadable, NoticeView, PageTitle, Time, useLoad, type Notice } from '../ui.ts';

const ACTIVE = new Set(['queued', 'running']);
const label = (x: Json) => x.title || x.url || x.sourceUrl || x.filename || x.id;

/** Sources and ingest jobs from GET /v1/account/overview; DELETE /v1/sources/{id} queues a deletion. */
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
    <p>Add sources with an API key (<code>POST /v1/ingest/url</code>, <code>/v1/ingest/file</code>) or <code>cairn ingest</code>.</p>
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
                <td><span class=${`status ${j.status}`}>${j.status}</span>
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
