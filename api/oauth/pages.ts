import { CONNECTED_APP_SCOPES, type ConnectedAppScope } from '../../core/contracts/oauth.ts';
import { escapeHtml } from '../../core/oauth/provider.ts';

// Server-rendered sign-in and consent pages of the built-in authorization server: plain HTML forms
// that work without JavaScript, styled by the console's stylesheet (no inline style: the pages are
// served with a strict Content-Security-Policy, api/console/csp.ts).

export const SCOPE_TEXT: Record<ConnectedAppScope, { label: string; detail: string }> = {
  'memory.read': {
    label: 'Read memory',
    detail: 'Read peers, sessions, messages and claims, and search them for context. Documents you ingested are not shared.',
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
<link rel="stylesheet" href="/assets/app.css"></head>
<body class="oauth"><header class="top"><span class="brand">Cairn</span></header><main>${body}</main></body></html>`;
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
