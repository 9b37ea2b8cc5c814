import { useState } from 'preact/hooks';
import { del, type Json } from '../lib/api.ts';
import { errorNotice, html, NoticeView, PageTitle, type Notice } from '../lib/ui.ts';
import { SignOutButton } from './signin.ts';

/**
 * The deletion_pending session: its only authority is retrying the deletion or signing out (spec 2.1).
 * The retry sends the signed-in email as the confirmation the user already typed.
 */
export function RecoveryPage({ session, onChange }: { session: Json; onChange: () => Promise<void> }) {
  const [notice, setNotice] = useState<Notice>(null);
  const [busy, setBusy] = useState(false);
  const retry = async () => {
    setBusy(true);
    setNotice({ kind: 'info', text: 'Retrying the deletion…' });
    try {
      await del('/v1/account', { confirmation: session.account.email });
      setNotice({ kind: 'success', text: 'Your account has been deleted.' });
      await onChange();
    } catch (err) {
      setNotice(errorNotice(err));
    } finally {
      setBusy(false);
    }
  };
  return html`<section class="narrow">
    <${PageTitle}>Account deletion did not finish</${PageTitle}>
    <p>The deletion of <strong>${session.account.email}</strong> started but has not completed. The account
      is locked: nothing can be read or changed until the deletion is retried.</p>
    <${NoticeView} notice=${notice} />
    <div class="actions">
      <button type="button" class="danger" onClick=${retry} disabled=${busy}>Retry deletion</button>
      <${SignOutButton} onDone=${onChange} />
    </div>
  </section>`;
}
