import { useEffect, useRef, useState } from 'preact/hooks';
import { del, get, post, type Json } from '../lib/api.ts';
import { errorNotice, html, Loadable, NoticeView, PageTitle, Time, useLoad, type Notice } from '../lib/ui.ts';

const SCOPES = [
  { id: 'ingest', detail: 'submit sources and read ingest jobs' },
  { id: 'query', detail: 'retrieve evidence and context' },
  { id: 'query.answer', detail: 'generate cited answers (needs query)' },
  { id: 'memory.read', detail: 'read native memory' },
  { id: 'memory.write', detail: 'write native memory' },
];

/** The raw key, shown once after create or rotate, with a copy button. Focus moves here. */
function SecretPanel({ secret, name, onDone }: { secret: { value: string; name: string; rotated: boolean }; name?: string; onDone: () => void }) {
  const heading = useRef<HTMLHeadingElement>(null);
  const field = useRef<HTMLInputElement>(null);
  const [copied, setCopied] = useState<string | null>(null);
  useEffect(() => heading.current?.focus(), [secret.value]);
  const copy = async () => {
    try {
      await navigator.clipboard.writeText(secret.value);
      setCopied('Copied to the clipboard.');
    } catch {
      field.current?.select();
      setCopied('Copying is blocked here: the key is selected, press Ctrl+C (⌘C) to copy it.');
    }
  };
  return html`<section class="secret" aria-labelledby="secret-title">
    <h2 id="secret-title" tabindex="-1" ref=${heading}>${secret.rotated ? 'Replacement key' : 'New key'} “${name ?? secret.name}”</h2>
    <p><strong>Copy this key now. It is shown only once</strong>${secret.rotated ? '; the previous key has stopped working' : ''}.</p>
    <label for="secret-value">API key</label>
    <div class="row">
      <input id="secret-value" readonly value=${secret.value} ref=${field} class="mono" onFocus=${(e: Event) => (e.currentTarget as HTMLInputElement).select()} />
      <button type="button" onClick=${copy}>Copy</button>
    </div>
    <p role="status" class="hint">${copied ?? ''}</p>
    <button type="button" onClick=${onDone}>I have stored it</button>
  </section>`;
}

function CreateKeyForm({ onCreated, onError }: { onCreated: (r: Json) => void; onError: (n: Notice) => void }) {
  const [scopes, setScopes] = useState<string[]>(['ingest', 'query']);
  const toggle = (id: string, on: boolean) => setScopes((s) => (on ? [...s, id] : s.filter((x) => x !== id)));
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    try {
      const ordered = SCOPES.map((s) => s.id).filter((id) => scopes.includes(id));
      onCreated(await post('/v1/account/api-keys', { name: String(data.get('name')), scopes: ordered, maxPreset: String(data.get('maxPreset')) }));
      form.reset();
      setScopes(['ingest', 'query']);
    } catch (err) {
      onError(errorNotice(err));
    }
  };
  const answerWithoutQuery = scopes.includes('query.answer') && !scopes.includes('query');
  return html`<form onSubmit=${submit} class="card" aria-labelledby="create-title">
    <h2 id="create-title">Create a key</h2>
    <label for="key-name">Name</label>
    <input id="key-name" name="name" required maxlength="100" placeholder="e.g. laptop scripts" />
    <fieldset>
      <legend>Scopes</legend>
      ${SCOPES.map(
        (s) => html`<label class="check"><input type="checkbox" name="scope" value=${s.id} checked=${scopes.includes(s.id)}
          onChange=${(e: Event) => toggle(s.id, (e.currentTarget as HTMLInputElement).checked)} />
          <code>${s.id}</code> <span class="hint">${s.detail}</span></label>`,
      )}
    </fieldset>
    ${answerWithoutQuery ? html`<p class="notice error" role="alert">query.answer also needs the query scope.</p>` : null}
    <label for="key-preset">Preset ceiling</label>
    <select id="key-preset" name="maxPreset" aria-describedby="preset-hint">
      <option value="accuracy">accuracy (may use either preset)</option>
      <option value="efficient">efficient only</option>
    </select>
    <p id="preset-hint" class="hint">The highest query preset this key may request.</p>
    <button type="submit" class="primary" disabled=${answerWithoutQuery}>Create key</button>
  </form>`;
}

/** API keys: list (never secrets) with last-used time, create, rotate, revoke (spec 4.2). */
export function KeysPage() {
  const [state, reload] = useLoad(() => get('/v1/account/api-keys'));
  const [notice, setNotice] = useState<Notice>(null);
  const [secret, setSecret] = useState<{ value: string; name: string; rotated: boolean } | null>(null);

  const created = (rotated: boolean) => async (r: Json) => {
    setSecret({ value: r.secret, name: r.apiKey.name, rotated });
    setNotice(null);
    await reload();
  };
  const rotate = async (key: Json) => {
    if (!confirm(`Rotate “${key.name}”? The current key stops working at once.`)) return;
    try {
      await created(true)(await post(`/v1/account/api-keys/${key.id}/rotate`));
    } catch (err) {
      setNotice(errorNotice(err));
    }
  };
  const revoke = async (key: Json) => {
    if (!confirm(`Revoke “${key.name}”? Anything using it stops working at once.`)) return;
    try {
      await del(`/v1/account/api-keys/${key.id}`);
      setNotice({ kind: 'success', text: `Revoked “${key.name}”.` });
      await reload();
    } catch (err) {
      setNotice(errorNotice(err));
    }
  };

  return html`<${PageTitle}>API keys</${PageTitle}>
    <p>Keys authorize your applications on ingest, query and memory routes. The service stores only a hash: a
      key is shown once when created or rotated.</p>
    <${NoticeView} notice=${notice} />
    ${secret ? html`<${SecretPanel} secret=${secret} onDone=${() => setSecret(null)} />` : null}
    <${Loadable} state=${state} retry=${reload}>${(data: Json) =>
      data.apiKeys.length === 0
        ? html`<p class="muted">No keys yet.</p>`
        : html`<div class="table-wrap"><table>
            <caption class="sr-only">Your API keys</caption>
            <thead><tr><th scope="col">Name</th><th scope="col">Key</th><th scope="col">Scopes</th><th scope="col">Preset ceiling</th>
              <th scope="col">Status</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>${data.apiKeys.map(
              (k: Json) => html`<tr key=${k.id} class=${k.status}>
                <th scope="row">${k.name}</th>
                <td><code>${k.prefix}…</code></td>
                <td>${k.scopes.length ? k.scopes.map((s: string) => html`<code class="tag">${s}</code> `) : html`<span class="muted">none</span>`}</td>
                <td>${k.maxPreset}</td>
                <td>${k.status === 'active' ? 'active' : k.replacedBy ? 'rotated' : 'revoked'}</td>
                <td><${Time} iso=${k.createdAt} /></td>
                <td><${Time} iso=${k.lastUsedAt} /></td>
                <td class="actions">${k.status === 'active'
                  ? html`<button type="button" onClick=${() => rotate(k)} aria-label=${`Rotate ${k.name}`}>Rotate</button>
                      <button type="button" class="danger" onClick=${() => revoke(k)} aria-label=${`Revoke ${k.name}`}>Revoke</button>`
                  : null}</td>
              </tr>`,
            )}</tbody></table></div>`}
    </${Loadable}>
    <${CreateKeyForm} onCreated=${created(false)} onError=${setNotice} />`;
}
