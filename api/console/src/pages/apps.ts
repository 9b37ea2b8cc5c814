import { useState } from 'preact/hooks';
import { del, get, type Json } from '../api.ts';
import { errorNotice, html, Loadable, NoticeView, PageTitle, Time, useLoad, type Notice } from '../ui.ts';

/** MCP clients the user authorized (GET/DELETE /v1/account/connected-apps). */
export function AppsPage() {
  const [state, reload] = useLoad(() => get('/v1/account/connected-apps'));
  const [notice, setNotice] = useState<Notice>(null);
  const revoke = async (a: Json) => {
    const name = a.clientName ?? a.clientId;
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
    <p>MCP clients you connected with “Allow”. Disconnecting one ends its access on its next request; it does not
      sign you out or affect your API keys.</p>
    <${NoticeView} notice=${notice} />
    <${Loadable} state=${state} retry=${reload}>${(d: Json) =>
      d.connectedApps.length === 0
        ? html`<p class="muted">No connected applications.</p>`
        : html`<div class="table-wrap"><table>
          <thead><tr><th scope="col">Application</th><th scope="col">Access</th><th scope="col">Authorized</th>
            <th scope="col">Last used</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
          <tbody>${d.connectedApps.map(
            (a: Json) => html`<tr key=${a.id}>
              <th scope="row">${a.clientName ?? a.clientId}<div class="hint mono">${a.clientId}</div></th>
              <td>${a.scopes.map((s: string) => html`<code class="tag">${s}</code> `)}</td>
              <td><${Time} iso=${a.authorizedAt} /></td><td><${Time} iso=${a.lastUsedAt} /></td>
              <td class="actions"><button type="button" class="danger" onClick=${() => revoke(a)}
                aria-label=${`Disconnect ${a.clientName ?? a.clientId}`}>Disconnect</button></td>
            </tr>`,
          )}</tbody></table></div>`}
    </${Loadable}>`;
}
