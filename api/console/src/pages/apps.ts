import { useState } from 'preact/hooks';
import { del, get, put, type Json } from '../lib/api.ts';
import { errorNotice, html, Loadable, NoticeView, PageTitle, Time, useLoad, type Notice } from '../lib/ui.ts';

/** Where an application's authorizations return to, as a person recognises it: the host (or the URI). */
const returnsTo = (a: Json) =>
  [...new Set((a.redirectUris as string[]).map((u) => (URL.canParse(u) ? new URL(u).host || u : u)))].join(', ');
const nameOf = (a: Json): string => a.clientName ?? a.registrations[0].clientId;

const SCOPES = [
  { scope: 'memory.read', label: 'Read memory' },
  { scope: 'memory.write', label: 'Write memory' },
];

/**
 * An application of the external identity provider waiting for the user (the consent step): allow it
 * with the chosen access (PUT /v1/account/connected-apps/{id}), or deny it (DELETE).
 */
function PendingApp({ app, done, setNotice }: { app: Json; done: () => Promise<void>; setNotice: (n: Notice) => void }) {
  const [chosen, setChosen] = useState<string[]>(['memory.read']);
  const name = nameOf(app);
  const act = async (what: () => Promise<unknown>, text: string) => {
    try {
      await what();
      setNotice({ kind: 'success', text });
      await done();
    } catch (err) {
      setNotice(errorNotice(err));
    }
  };
  const toggle = (scope: string, on: boolean) => setChosen(on ? [...chosen, scope] : chosen.filter((s) => s !== scope));
  return html`<li class="card" key=${app.id}>
    <p><strong>${name}</strong> <span class="hint mono">${app.registrations[0].clientId}</span> asks to connect to your memory
      (first seen <${Time} iso=${app.firstConnectedAt} />). Allow it only if you just connected this application yourself.</p>
    <fieldset><legend>Access</legend>${SCOPES.map(
      (s) => html`<label><input type="checkbox" checked=${chosen.includes(s.scope)}
        onChange=${(e: Event) => toggle(s.scope, (e.target as HTMLInputElement).checked)} /> ${s.label}</label> `,
    )}</fieldset>
    <button type="button" disabled=${chosen.length === 0} aria-label=${`Allow ${name}`}
      onClick=${() => act(() => put(`/v1/account/connected-apps/${app.id}`, { scopes: chosen }), `Allowed ${name}.`)}>Allow</button>
    <button type="button" class="danger" aria-label=${`Deny ${name}`}
      onClick=${() => act(() => del(`/v1/account/connected-apps/${app.id}`), `Denied ${name}.`)}>Deny</button>
  </li>`;
}


/** MCP clients the user connected (GET/PUT/DELETE /v1/account/connected-apps), one row per application. */
export function AppsPage() {
  const [state, reload] = useLoad(() => get('/v1/account/connected-apps'));
  const [notice, setNotice] = useState<Notice>(null);
  const revoke = async (a: Json) => {
    const name = nameOf(a);
    if (!confirm(`Disconnect ${name}? It loses access to your memory at once.`)) return;
    try {
      await del(`/v1/account/connected-apps/${a.id}`);
      setNotice({ kind: 'success', text: `Disconnected ${name}.` });
      await reload();
    } catch (err) {
      setNotice(errorNotice(err));
    }
  };
  return html`<${PageTitle}>Connected applications</${PageTitle}>
    <p>MCP clients you connected with “Allow”. An application that registered again (a new client id, the same
      name and return address) is listed once, with each registration. Disconnecting ends the access of all its
      registrations on their next request; it does not sign you out or affect your API keys.</p>
    <${NoticeView} notice=${notice} />
    <${Loadable} state=${state} retry=${reload}>${(d: Json) => {
      const pending = d.connectedApps.filter((a: Json) => a.status === 'pending');
      const active = d.connectedApps.filter((a: Json) => a.status !== 'pending');
      return html`${pending.length > 0 &&
        html`<h2>Waiting for your approval</h2>
          <ul class="plain">${pending.map((a: Json) => html`<${PendingApp} app=${a} done=${reload} setNotice=${setNotice} />`)}</ul>`}
      ${active.length === 0
        ? html`<p class="muted">No connected applications.</p>`
        : html`<div class="table-wrap"><table>
          <thead><tr><th scope="col">Application</th><th scope="col">Access</th><th scope="col">First connected</th>
            <th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>${active.map(
            (a: Json) => html`<tr key=${a.id}>
              <th scope="row">${nameOf(a)}
                <div class="hint">${a.redirectUris.length ? `returns to ${returnsTo(a)}` : 'external identity provider'}</div>
                <details class="hint"><summary>${a.registrations.length === 1 ? '1 registration' : `${a.registrations.length} registrations`}</summary>
                  <ul>${a.registrations.map(
                    (r: Json) => html`<li key=${r.clientId}><span class="mono">${r.clientId}</span>:
                      ${r.scopes.join(', ')}, connected <${Time} iso=${r.connectedAt} />, last used <${Time} iso=${r.lastUsedAt} /></li>`,
                  )}</ul>
                </details></th>
              <td>${a.scopes.map((s: string) => html`<code class="tag">${s}</code> `)}</td>
              <td><${Time} iso=${a.firstConnectedAt} /></td><td><${Time} iso=${a.lastUsedAt} /></td>
              <td class="actions"><button type="button" class="danger" onClick=${() => revoke(a)}
                aria-label=${`Disconnect ${nameOf(a)}`}>Disconnect</button></td>
            </tr>`,
          )}</tbody></table></div>`}`;
    }}
    </${Loadable}>`;
}
