import { useState } from 'preact/hooks';
import { post } from '../lib/api.ts';
import { useRoute } from '../lib/router.ts';
import { errorNotice, html, NoticeView, PageTitle, when, type Notice } from '../lib/ui.ts';

/**
 * The CLI device flow's verificationUrl (/device?code=XXXX-XXXX): approves the code shown in the
 * terminal for the signed-in account (POST /v1/auth/cli/device/approve).
 */
export function DevicePage() {
  const { query } = useRoute();
  const [code, setCode] = useState(query.get('code') ?? '');
  const [notice, setNotice] = useState<Notice>(null);
  const [approved, setApproved] = useState<{ userCode: string; expiresAt: string } | null>(null);
  const submit = async (event: SubmitEvent) => {
    event.preventDefault();
    setNotice(null);
    try {
      const r = await post('/v1/auth/cli/device/approve', { userCode: code.trim() });
      setApproved({ userCode: r.userCode, expiresAt: r.expiresAt });
    } catch (err) {
      setNotice(
        (err as { code?: string }).code === 'not_found'
          ? { kind: 'error', text: 'This code has expired or was already used. Run `cairn login` again to get a new code.' }
          : errorNotice(err),
      );
    }
  };
  if (approved) {
    return html`<section class="narrow">
      <${PageTitle}>CLI sign-in approved</${PageTitle}>
      <p class="notice success" role="status">Code <strong>${approved.userCode}</strong> is approved. Return to your terminal: the
        CLI finishes signing in on its next poll (the request expires ${when(approved.expiresAt)}).</p>
      <p>You can close this page.</p>
    </section>`;
  }
  return html`<section class="narrow">
    <${PageTitle}>Approve a CLI sign-in</${PageTitle}>
    <p>Approve only a code you started yourself with <code>cairn login</code>. The CLI then gets its own session
      for this account; it can manage keys and usage but cannot delete the account.</p>
    <${NoticeView} notice=${notice} />
    <form onSubmit=${submit}>
      <label for="user-code">Code shown in your terminal</label>
      <input id="user-code" name="userCode" autocomplete="off" autocapitalize="characters" spellcheck="false" required
        maxlength="32" pattern="[A-Za-z0-9]{4}-?[A-Za-z0-9]{4}" aria-describedby="user-code-hint" value=${code}
        onInput=${(e: Event) => setCode((e.currentTarget as HTMLInputElement).value)} />
      <p id="user-code-hint" class="hint">Eight letters or digits, like ABCD-1234.</p>
      <button type="submit" class="primary">Approve</button>
    </form>
  </section>`;
}
