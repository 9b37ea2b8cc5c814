import { useState } from 'preact/hooks';
import { ApiError, del, post, type Json } from '../lib/api.ts';
import { errorNotice, html, NoticeView, PageTitle, Time, type Notice } from '../lib/ui.ts';

/** Password change: the current password, the new one twice; every other session ends. */
function PasswordForm() {
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const data = new FormData(form);
    if (data.get('newPassword') !== data.get('repeat')) {
      setNotice({ kind: 'error', text: 'The two new passwords differ.' });
      return;
    }
    setBusy(true);
    try {
      const r = await post('/v1/account/password', { currentPassword: String(data.get('currentPassword')), newPassword: String(data.get('newPassword')) });
      const ended = r.browserSessionsEnded + r.cliSessionsEnded;
      setNotice({ kind: 'success', text: `Password changed. ${ended === 0 ? 'No other session was signed in.' : `${ended} other ${ended === 1 ? 'session was' : 'sessions were'} signed out.`}` });
      form.reset();
    } catch (err) {
      setNotice(errorNotice(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="card" aria-labelledby="password-title">
    <h2 id="password-title">Change password</h2>
    <p class="hint">Every other browser and CLI session of this account is signed out; API keys and connected applications keep working.</p>
    <${NoticeView} notice=${notice} />
    <form onSubmit=${submit}>
      <label for="pw-current">Current password</label>
      <input id="pw-current" name="currentPassword" type="password" autocomplete="current-password" required />
      <label for="pw-new">New password</label>
      <input id="pw-new" name="newPassword" type="password" autocomplete="new-password" required minlength="15" maxlength="128" aria-describedby="pw-hint" />
      <p id="pw-hint" class="hint">15 to 128 characters.</p>
      <label for="pw-repeat">New password again</label>
      <input id="pw-repeat" name="repeat" type="password" autocomplete="new-password" required minlength="15" maxlength="128" />
      <button type="submit" class="primary" disabled=${busy}>Change password</button>
    </form>
  </section>`;
}

/** The signed-in account, its session, and deletion with typed email confirmation (DELETE /v1/account). */
export function AccountPage({ session, refreshSession }: { session: Json; refreshSession: () => Promise<void> }) {
  const email: string = session.account.email;
  const [typed, setTyped] = useState('');
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const [deleted, setDeleted] = useState(false);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    if (typed !== email) return;
    setBusy(true);
    setNotice({ kind: 'info', text: 'Deleting your account…' });
    try {
      await del('/v1/account', { confirmation: typed });
      setDeleted(true);
      setNotice(null);
    } catch (err) {
      setNotice(errorNotice(err));
      // A deletion that started but did not finish leaves the session deletion_pending: show recovery.
      if (err instanceof ApiError && err.code === 'account_deletion_pending') await refreshSession();
    } finally {
      setBusy(false);
    }
  };
  if (deleted) {
    return html`<${PageTitle}>Account deleted</${PageTitle}>
      <p class="notice success" role="status">${email} and all its data have been deleted. You are signed out.</p>
      <p><a href="/" onClick=${() => void refreshSession()}>Back to sign-in</a></p>`;
  }
  const mismatch = typed.length > 0 && typed !== email;
  return html`<${PageTitle}>Account</${PageTitle}>
    <dl class="stats compact">
      <div><dt>Email</dt><dd>${email}</dd></div>
      <div><dt>Display name</dt><dd>${session.account.displayName ?? html`<span class="muted">not set</span>`}</dd></div>
      <div><dt>Signed in</dt><dd><${Time} iso=${session.session.issuedAt} /></dd></div>
      <div><dt>Session expires</dt><dd><${Time} iso=${session.session.expiresAt} /></dd></div>
    </dl>
    <${PasswordForm} />
    <section class="card danger-zone" aria-labelledby="delete-title">
      <h2 id="delete-title">Delete this account</h2>
      <p>This deletes the account, its sources, memory, keys, CLI sessions and connected applications. It cannot be undone.</p>
      <${NoticeView} notice=${notice} />
      <form onSubmit=${submit}>
        <label for="confirm-email">Type <strong>${email}</strong> to confirm</label>
        <input id="confirm-email" name="confirmation" type="email" autocomplete="off" required value=${typed}
          aria-describedby=${mismatch ? 'confirm-hint' : undefined} aria-invalid=${mismatch ? 'true' : undefined}
          onInput=${(e: Event) => setTyped((e.currentTarget as HTMLInputElement).value)} />
        ${mismatch ? html`<p id="confirm-hint" class="hint">This does not match the signed-in email yet.</p>` : null}
        <button type="submit" class="danger" disabled=${busy || typed !== email}>Delete account permanently</button>
      </form>
    </section>`;
}
