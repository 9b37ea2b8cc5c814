import { useState } from 'preact/hooks';
import { del, post } from '../lib/api.ts';
import { errorNotice, html, NoticeView, PageTitle, type Notice } from '../lib/ui.ts';

/** Email and password sign-in (POST /v1/auth/login); the session cookie is set by the response. */
export function SignInPage({ onSignedIn, forDevice }: { onSignedIn: () => Promise<void>; forDevice: boolean }) {
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = new FormData(event.currentTarget as HTMLFormElement);
    setBusy(true);
    setNotice(null);
    try {
      await post('/v1/auth/login', { email: String(form.get('email')), password: String(form.get('password')) });
      await onSignedIn();
    } catch (err) {
      setNotice(errorNotice(err));
      setBusy(false);
    }
  };
  return html`<section class="narrow">
    <${PageTitle}>Sign in to Cairn</${PageTitle}>
    ${forDevice ? html`<p>Sign in to approve the sign-in request from your terminal.</p>` : null}
    <${NoticeView} notice=${notice} />
    <form onSubmit=${submit}>
      <label for="email">Email</label>
      <input id="email" name="email" type="email" autocomplete="username" required maxlength="254" />
      <label for="password">Password</label>
      <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="128" />
      <button type="submit" class="primary" disabled=${busy}>${busy ? 'Signing in…' : 'Sign in'}</button>
    </form>
  </section>`;
}

/** DELETE /v1/auth/session: ends the browser session (API keys and CLI sessions stay valid). */
export function SignOutButton({ onDone }: { onDone: () => Promise<void> }) {
  const signOut = async () => {
    try {
      await del('/v1/auth/session');
    } finally {
      await onDone();
    }
  };
  return html`<button type="button" class="link" onClick=${signOut}>Sign out</button>`;
}
