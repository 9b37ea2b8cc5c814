import { CONNECTED_APP_SCOPES, type ConnectedAppScope } from '../../shared/oauth/connected-apps.ts';
import { escapeHtml } from '../../shared/oauth/provider.ts';

// Server-rendered sign-in and consent pages of the built-in authorization server: plain HTML forms
// that work without JavaScript (the console will restyle them later).

export const SCOPE_TEXT: Record<ConnectedAppScope, { label: string; detail: string }> = {
  'memory.read': {
    label: 'Read memory',
    detail: 'Read peers, sessions, messages and claims, and retrieve context from your memory and sources.',
  },
  'memory.write': {
    label: 'Write memory',
    detail: 'Create peers and sessions, add messages, correct or withdraw claims, delete peers and sessions.',
  },
};

function page(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Cairn</title>
<style>
body{font:16px/1.5 system-ui,sans-serif;max-width:32rem;margin:3rem auto;padding:0 1rem;color:#1d232b}
h1{font-size:1.4rem}label{display:block;margin:.75rem 0}input[type=email],input[type=password]{width:100%;padding:.5rem;font:inherit}
fieldset{border:1px solid #ccd;border-radius:6px;margin:1rem 0}.hint{color:#566;font-size:.9rem}.error{color:#a11}
button{font:inherit;padding:.5rem 1.2rem;margin-right:.5rem}
</style></head><body>${body}</body></html>`;
}

export function signInPage(opts: { action: string; clientName: string; error?: string; email?: string }): string {
  return page(
    'Sign in',
    `<h1>Sign in to connect ${escapeHtml(opts.clientName)}</h1>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
<form method="post" action="${escapeHtml(opts.action)}">
<label>Email <input type="email" name="email" autocomplete="username" required value="${escapeHtml(opts.email ?? '')}"></label>
<label>Password <input type="password" name="password" autocomplete="current-password" required minlength="15" maxlength="128"></label>
<button type="submit">Sign in</button>
</form>`,
  );
}

export function consentPage(opts: {
  action: string;
  abortAction: string;
  clientName: string;
  clientId: string;
  redirectHost: string;
  email: string;
  current: readonly ConnectedAppScope[];
  error?: string;
}): string {
  const boxes = CONNECTED_APP_SCOPES.map(
    (s) => `<label><input type="checkbox" name="scope" value="${s}"${opts.current.includes(s) ? ' checked' : ''}>
<strong>${SCOPE_TEXT[s].label}</strong> <code>${s}</code><br><span class="hint">${SCOPE_TEXT[s].detail}</span></label>`,
  ).join('\n');
  return page(
    'Connect an application',
    `<h1>Connect ${escapeHtml(opts.clientName)} to your memory?</h1>
<p>Signed in as <strong>${escapeHtml(opts.email)}</strong>. The application (client <code>${escapeHtml(opts.clientId)}</code>) will be
sent back to <strong>${escapeHtml(opts.redirectHost)}</strong> and can use the Cairn MCP tools with the access you choose.
You can disconnect it at any time; that does not sign you out or affect your API keys.</p>
${opts.error ? `<p class="error" role="alert">${escapeHtml(opts.error)}</p>` : ''}
<form method="post" action="${escapeHtml(opts.action)}">
<fieldset><legend>Access</legend>
${boxes}
</fieldset>
<button type="submit">Allow</button>
<button type="submit" formaction="${escapeHtml(opts.abortAction)}">Deny</button>
</form>`,
  );
}

export function messagePage(title: string, message: string): string {
  return page(title, `<h1>${escapeHtml(title)}</h1><p>${escapeHtml(message)}</p>`);
}
