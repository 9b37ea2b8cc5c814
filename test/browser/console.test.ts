import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, createKey, createTestAccount, signIn, sqlClient, type Json, type Sql, type TestAccount } from '../helpers/accounts.ts';
import { cairnHome, finished, spawnCairn } from '../helpers/cairn.ts';
import { launchChromium, openConsole, screenshot, signInThroughConsole, type ConsolePage } from '../helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startFixtureServer } from '../helpers/fixture-server.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { MemoryOAuthClient } from '../helpers/oauth-client.ts';
import { proseLines, scannedPdf } from '../helpers/scanned-pdf.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The browser console end to end: real API (with the built console, the OAuth server and MCP), real
// worker, real PostgreSQL and Temporal, driven in headless Chromium. Every page is checked for script
// errors, CSP refusals and requests to other origins.

let db: TestDatabase;
let sql: Sql;
let stack: McpStack;
let api: ApiClient;
let browser: Browser;
let worker: Awaited<ReturnType<typeof startWorker>>;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let alice: TestAccount;
let tab: ConsolePage;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  fixtures = await startFixtureServer({
    '/guide.md': { type: 'text/markdown', body: '# Field guide\n\nCairns mark trails above the tree line. Add a stone when you pass.\n' },
    '/lighthouse.md': { type: 'text/markdown', body: '# Skerrow lighthouse\n\nThe Skerrow light was first lit in 1851. Its lamp turns every twelve seconds.\n' },
  });
  stack = await startMcpStack({ orm: db.orm, temporal, taskQueue, env: { INGEST_URL_ALLOWLIST: fixtures.origin } });
  worker = await startWorker({ orm: db.orm, taskQueue, urlAllowlist: [fixtures.origin] });
  api = new ApiClient(stack.baseUrl);
  alice = await createTestAccount(db.orm);
  browser = await launchChromium();
  tab = await openConsole(browser, stack.baseUrl);
});

afterAll(async () => {
  await tab?.context.close();
  await browser?.close();
  await worker?.stop();
  await stack?.close();
  await fixtures?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const bearer = (token: string) => ({ as: { bearer: token } });
/** Polls `probe` (every 100 ms, up to 30 s) until it returns a value. */
async function waitFor<T>(probe: () => T | undefined, what: string): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
const heading = (name: string | RegExp) => tab.page.getByRole('heading', { name, level: 1 });
const waitUntil = async (probe: () => Promise<boolean>, what: string, timeoutMs = 30_000) => {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

describe('serving', () => {
  it('serves the shell with a strict CSP, no inline script and only same-origin assets', async () => {
    for (const p of ['/', '/keys', '/usage-does-not-exist', '/device']) {
      const res = await fetch(`${stack.baseUrl}${p}`);
      if (p === '/usage-does-not-exist') {
        expect(res.status).toBe(404);
        continue;
      }
      expect(res.status).toBe(200);
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).not.toMatch(/unsafe-inline|unsafe-eval|https?:/);
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const body = await res.text();
      expect(body).not.toMatch(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(body).not.toMatch(/<style|style=/);
      expect(body).not.toMatch(/(src|href)="(https?:)?\/\//);
    }
    const js = await fetch(`${stack.baseUrl}/assets/app.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    expect((await fetch(`${stack.baseUrl}/assets/.built`)).status).toBe(404);
  });
});

describe('the console in Chromium', () => {
  it('signs in (a wrong password is announced), shows usage with the 30-day chart', async () => {
    const { page } = tab;
    await page.goto('/');
    await heading('Sign in to Cairn').waitFor();
    await screenshot(page, 'sign-in');
    await page.getByLabel('Email').fill(alice.email);
    await page.getByLabel('Password').fill('a wrong password of some length');
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByRole('alert').filter({ hasText: /unauthorized|password/i }).waitFor();
    await signInThroughConsole(page, alice);
    await heading('Usage').waitFor();
    // The heading of a newly shown page has focus (screen readers announce it).
    expect(await page.evaluate('document.activeElement?.textContent')).toBe('Usage');
    const chart = page.getByRole('img', { name: 'Daily usage, last 30 UTC days' });
    await chart.waitFor();
    expect(await chart.locator('rect').count()).toBe(60);
    expect(await page.getByRole('term').filter({ hasText: 'Total remaining' }).count()).toBe(1);
  });

  it('creates a key (secret once, copy button), uses it, rotates it and revokes the replacement', async () => {
    const { page } = tab;
    await page.getByRole('link', { name: 'API keys' }).click();
    await heading('API keys').waitFor();
    await page.getByLabel('Name').fill('notebook');
    await page.getByRole('checkbox', { name: /memory\.read/ }).check();
    await page.getByLabel('Preset ceiling').selectOption('efficient');
    await page.getByRole('button', { name: 'Create key' }).click();
    const secretField = page.getByLabel('API key', { exact: true });
    await secretField.waitFor();
    const secret = await secretField.inputValue();
    expect(secret).toMatch(/^cairn_sk_/);
    // Focus moves to the one-time secret panel.
    expect(await page.evaluate('document.activeElement?.id')).toBe('secret-title');
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).toBe(secret);
    await screenshot(page, 'api-keys');

    const access = await api.get('/v1/access', bearer(secret));
    expect(access.status).toBe(200);
    expect(access.body.key).toMatchObject({ name: 'notebook', scopes: ['ingest', 'query', 'memory.read'], maxPreset: 'efficient' });

    await page.getByRole('button', { name: 'I have stored it' }).click();
    await page.reload();
    const row = page.getByRole('row', { name: /notebook/ });
    await row.waitFor();
    expect(await row.locator('td').nth(5).innerText()).not.toBe('never'); // last used
    expect(await page.getByLabel('API key', { exact: true }).count()).toBe(0); // never shown again

    await page.getByRole('button', { name: 'Rotate notebook' }).click();
    await page.getByRole('heading', { name: /Replacement key/ }).waitFor();
    const replacement = await page.getByLabel('API key', { exact: true }).inputValue();
    expect(replacement).not.toBe(secret);
    expect((await api.get('/v1/access', bearer(secret))).status).toBe(401);
    expect((await api.get('/v1/access', bearer(replacement))).status).toBe(200);
    await page.getByText('rotated', { exact: true }).waitFor();

    await page.getByRole('button', { name: 'Revoke notebook' }).click();
    await page.getByText('Revoked “notebook”.').waitFor();
    expect((await api.get('/v1/access', bearer(replacement))).status).toBe(401);
  });

  it('approves a device code started as the CLI starts it, with clear expiry and success messages', async () => {
    const started = await api.post('/v1/auth/cli/device', { body: { clientName: 'cairn cli' } });
    expect(started.status).toBe(201);
    const { verificationUrl, userCode, deviceCode } = started.body;
    expect(verificationUrl).toBe(`${stack.baseUrl}/device?code=${userCode}`);

    // Opened signed out (a fresh browser profile): sign in first, the code stays prefilled.
    const other = await openConsole(browser, stack.baseUrl);
    await other.page.goto(verificationUrl);
    await other.page.getByText('Sign in to approve the sign-in request from your terminal.').waitFor();
    await signInThroughConsole(other.page, alice, verificationUrl);
    expect(await other.page.getByLabel('Code shown in your terminal').inputValue()).toBe(userCode);
    await screenshot(other.page, 'device-approval');
    await other.page.getByRole('button', { name: 'Approve' }).click();
    await other.page.getByRole('heading', { name: 'CLI sign-in approved' }).waitFor();
    await other.page.getByText(`Code ${userCode} is approved.`, { exact: false }).waitFor();
    await screenshot(other.page, 'device-approved');
    expect(other.problems).toEqual([]);
    await other.context.close();

    const token = await api.post('/v1/auth/cli/token', { body: { deviceCode } });
    expect(token.status).toBe(200);
    expect(token.body.account.email).toBe(alice.email);

    // An expired code: the page says so and what to do.
    const late = await api.post('/v1/auth/cli/device', { body: {} });
    await sql.query(`update cli_device_authorization set expires_at = now() - interval '1 second' where user_code = $1`, [late.body.userCode]);
    await tab.page.goto(late.body.verificationUrl);
    await tab.page.getByRole('button', { name: 'Approve' }).click();
    await tab.page.getByRole('alert').filter({ hasText: 'This code has expired or was already used. Run `cairn login` again' }).waitFor();
    expect((await api.post('/v1/auth/cli/token', { body: { deviceCode: late.body.deviceCode } })).body.error.code).toBe('device_code_expired');
  });

  it('approves the code the real `cairn login` prints, and the CLI then holds a session of that account', async () => {
    const home = await cairnHome();
    try {
      const login = spawnCairn(['login', '--base-url', stack.baseUrl, '--no-browser'], home.env);
      const url = await waitFor(() => /open (\S+\/device\?code=\S+)/.exec(login.output.stderr)?.[1], 'the verification URL on stderr');
      const code = /confirm the code: (\S+)/.exec(login.output.stderr)?.[1];
      expect(url).toBe(`${stack.baseUrl}/device?code=${code}`);
      const page = await openConsole(browser, stack.baseUrl);
      await page.page.goto(url);
      await signInThroughConsole(page.page, alice, url);
      expect(await page.page.getByLabel('Code shown in your terminal').inputValue()).toBe(code);
      await page.page.getByRole('button', { name: 'Approve' }).click();
      await page.page.getByRole('heading', { name: 'CLI sign-in approved' }).waitFor();
      expect(page.problems).toEqual([]);
      await page.context.close();
      const done = await finished(login);
      expect(done.code, done.stderr).toBe(0);
      const whoami = await finished(spawnCairn(['whoami', '--base-url', stack.baseUrl, '--json'], home.env));
      expect(whoami.code, whoami.stderr).toBe(0);
      expect(JSON.stringify(whoami.json)).toContain(alice.email);
    } finally {
      await home.remove();
    }
  });

  it('adds a URL and a file from the browser: the dry-run plan, then the queued job watched to its end', { timeout: 150_000 }, async () => {
    const { page } = tab;
    await page.goto('/sources');
    await heading('Sources and ingest jobs').waitFor();
    const add = page.getByRole('region', { name: 'Add a source' });
    // A page answering 404 is refused at the preview, with the service's reason; nothing can be queued.
    await add.getByLabel('URL', { exact: true }).fill(`${fixtures.origin}/missing.md`);
    await add.getByRole('button', { name: 'Preview' }).click();
    await add.getByRole('alert').filter({ hasText: /404.*\(ingest_job_failed\)/ }).waitFor();
    expect(await add.getByRole('button', { name: 'Queue it' }).count()).toBe(0);

    await add.getByLabel('URL', { exact: true }).fill(`${fixtures.origin}/lighthouse.md`);
    await add.getByRole('button', { name: 'Preview' }).click();
    const plan = add.getByRole('region', { name: 'Preview (nothing was stored)' });
    await plan.waitFor();
    expect(await plan.innerText()).toMatch(/"Skerrow lighthouse" \(text\/markdown, \d+ bytes\)/);
    expect(await sql.count(`select 1 from ingest_job where account_id = $1 and source_url like '%lighthouse%'`, [alice.id])).toBe(0);
    await screenshot(page, 'ingest-plan');
    await add.getByLabel('Dated').fill('2026-11-02');
    await add.getByRole('button', { name: 'Queue it' }).click();
    const job = add.getByRole('region', { name: /^Ingest job/ });
    await job.getByRole('status').filter({ hasText: /Status: succeeded( \(attempt \d+\))? — \d+ records from “Skerrow lighthouse”/ }).waitFor({ timeout: 60_000 });
    await screenshot(page, 'ingest-job');
    await page.getByRole('region', { name: /^Sources/ }).getByRole('row', { name: /Skerrow lighthouse/ }).waitFor();
    const [queued] = await sql.query(`select dated_at::text as d, status from ingest_job where account_id = $1 and source_url like '%lighthouse%'`, [alice.id]);
    expect(queued).toEqual({ d: '2026-11-02', status: 'succeeded' });

    // A file from this computer: read in the browser, previewed, queued.
    await add.getByLabel('a file').check();
    await add.getByLabel('File', { exact: true }).setInputFiles({
      name: 'keeper-log.md', mimeType: 'text/markdown', buffer: Buffer.from('# Keeper log\n\nThe keeper of Skerrow logs 47 storms a year.\n'),
    });
    await add.getByRole('button', { name: 'Preview' }).click();
    await plan.filter({ hasText: '"Keeper log" (text/markdown' }).waitFor();
    await add.getByRole('button', { name: 'Queue it' }).click();
    await job.getByRole('status').filter({ hasText: /Status: succeeded( \(attempt \d+\))? — \d+ records from “Keeper log”/ }).waitFor({ timeout: 60_000 });
    expect(await sql.count(`select 1 from ingest_job where account_id = $1 and filename = 'keeper-log.md' and status = 'succeeded'`, [alice.id])).toBe(1);
    expect(tab.problems).toEqual([]);
  });

  it('warns that a scanned PDF\'s preview spends credits, then shows the text OCR recognised', { timeout: 150_000 }, async () => {
    const { page } = tab;
    await page.goto('/sources');
    const add = page.getByRole('region', { name: 'Add a source' });
    await add.getByLabel('a file').check();
    const file = add.getByLabel('File', { exact: true });
    expect(await page.locator(`#${await file.getAttribute('aria-describedby')}`).innerText()).toMatch(/scanned PDF.*OCR.*spends credits/s);
    await file.setInputFiles({ name: 'scan.pdf', mimeType: 'application/pdf', buffer: await scannedPdf([proseLines(1)]) });
    await add.getByRole('button', { name: 'Preview' }).click();
    const recognised = add.getByRole('group').filter({ hasText: 'Recognised text (OCR) of 1 page' });
    await recognised.waitFor({ timeout: 120_000 });
    expect(await recognised.innerText()).toMatch(/spent credits[\s\S]*Page 1 \(confidence \d+%\)[\s\S]*migrating terns/);
    await screenshot(page, 'ingest-ocr-preview');
  });

  it('lists sources and ingest jobs with status and failure message, and deletes a source', async () => {
    const key = await createKey(api, { bearer: await cliToken() }, { name: 'ingest key', scopes: ['ingest'] });
    const submit = (url: string, idempotencyKey: string) =>
      api.post('/v1/ingest/url', { as: { bearer: key.secret }, body: { url, dryRun: false, datedAt: '2026-11-01', idempotencyKey } });
    const ok = await submit(`${fixtures.origin}/guide.md`, 'console-ok-0001');
    const bad = await submit(`${fixtures.origin}/missing.md`, 'console-bad-0001');
    expect([ok.status, bad.status]).toEqual([202, 202]);
    const done = async (id: string) => {
      const j = await api.get(`/v1/ingest/jobs/${id}`, { as: { bearer: key.secret } });
      return ['succeeded', 'failed'].includes(j.body.job.status);
    };
    await waitUntil(async () => (await done(ok.body.job.id)) && (await done(bad.body.job.id)), 'both ingest jobs to end', 60_000);

    const { page } = tab;
    await page.goto('/sources');
    await heading('Sources and ingest jobs').waitFor();
    const sources = page.getByRole('region', { name: /^Sources/ });
    const source = sources.getByRole('row', { name: /Field guide/ });
    await source.waitFor();
    expect(await source.innerText()).toContain('active');
    const failed = page.getByRole('region', { name: 'Ingest jobs' }).getByRole('row', { name: /missing\.md/ });
    expect(await failed.innerText()).toMatch(/failed/);
    expect(await failed.getByRole('note').innerText()).toMatch(/^Failed: .+/);
    await screenshot(page, 'sources');

    // The browser session may delete a source only with the csrf proof, and only its own account's.
    const cookie = (await tab.context.cookies()).find((c) => c.name === 'service_session')!.value;
    const noCsrf = await api.delete(`/v1/account/sources/${ok.body.job.id}`, { as: { cookie }, csrf: false });
    expect(noCsrf.status).toBe(403);
    const stranger = await createTestAccount(db.orm);
    const strangerCookie = await signIn(api, stranger);
    expect((await api.delete(`/v1/account/sources/${ok.body.job.id}`, { as: { cookie: strangerCookie } })).status).toBe(404);

    await page.getByRole('button', { name: /^Delete Field guide/ }).click();
    await page.getByRole('status').filter({ hasText: /Deletion of “Field guide” is (queued|running|succeeded)/ }).waitFor();
    await waitUntil(async () => (await sources.getByRole('row', { name: /Field guide/ }).count()) === 0, 'the deleted source to disappear', 60_000);
    expect(await sql.count(`select 1 from source where id = $1 and status = 'deleted'`, [ok.body.job.id])).toBe(1);

    // A query's reserve and charge read as one line of -1 in the ledger.
    const asked = await api.post('/v1/account/answers/query', { as: { cookie }, body: { idempotencyKey: `console-${Date.now()}-q`, mode: 'evidence', query: 'cairns' } });
    expect(asked.status, JSON.stringify(asked.body)).toBe(200);
    // Usage now shows today's ingests in the chart and the quota counters.
    await page.getByRole('link', { name: 'Usage' }).click();
    await heading('Usage').waitFor();
    const today = page.locator('rect.bar-i').last();
    expect(Number(await today.getAttribute('height'))).toBeGreaterThan(0);
    expect(await page.getByRole('row', { name: /Ingests today/ }).innerText()).toMatch(/[1-9]\d* \/ /);
    const ledger = page.getByRole('region', { name: 'Recent credit ledger' });
    const spent = ledger.getByRole('row').nth(1);
    expect((await spent.innerText()).split('\t').slice(1, 4)).toEqual(['charge', '-1', 'query']);
    expect(await spent.locator('td.neg').count()).toBe(1);
    expect(await ledger.locator('td.pos').first().innerText()).toMatch(/^\+\d+/);
    expect(await ledger.getByRole('cell', { name: 'reserve', exact: true }).count()).toBe(0);
    await screenshot(page, 'usage');
  });

  it('fits a 390 px wide phone screen: no page scrolls sideways, wide tables scroll inside their frame', async () => {
    const { page } = tab;
    const before = page.viewportSize();
    await page.setViewportSize({ width: 390, height: 844 });
    try {
      const wide: Record<string, number> = {};
      const pages: [string, string][] = [['/sources', 'Sources and ingest jobs'], ['/', 'Usage'], ['/keys', 'API keys'], ['/apps', 'Connected applications'], ['/account', 'Account']];
      for (const [path, title] of pages) {
        await page.goto(path);
        await heading(title).waitFor();
        await page.waitForLoadState('networkidle');
        const width = Number(await page.evaluate('document.documentElement.scrollWidth'));
        if (width > 390) wide[path] = width;
      }
      expect(wide).toEqual({});
    } finally {
      if (before) await page.setViewportSize(before);
    }
  });

  it('authorizes an MCP client on the consent page, lists it under connected apps and revokes it', async () => {
    const oauth = new MemoryOAuthClient('Notebook agent');
    const transportFor = () => new StreamableHTTPClientTransport(new URL(stack.mcpUrl), { authProvider: oauth });
    await expect(new Client({ name: 't', version: '1' }).connect(transportFor())).rejects.toThrow(/Unauthorized/i);
    const { page } = tab;
    // The client's loopback redirect target: answered here, as the client's own listener would.
    await tab.context.route(`${oauth.redirectUrl}**`, (route) => route.fulfill({ status: 200, contentType: 'text/plain', body: 'done' }));
    const callback = page.waitForRequest((r) => r.url().startsWith(oauth.redirectUrl));
    await page.goto(oauth.authorizationUrl!.href);
    await page.getByRole('heading', { name: 'Connect Notebook agent to your memory?' }).waitFor();
    await screenshot(page, 'oauth-consent');
    await page.getByRole('checkbox', { name: /Write memory/ }).check();
    await page.getByRole('button', { name: 'Allow' }).click();
    const code = new URL((await callback).url()).searchParams.get('code');
    await page.waitForURL(`${oauth.redirectUrl}**`);
    expect(code).toBeTruthy();
    await transportFor().finishAuth(code!);
    const client = new Client({ name: 't', version: '1' });
    await client.connect(transportFor());
    await client.listTools();

    await page.goto('/apps');
    const row = page.getByRole('row', { name: /Notebook agent/ });
    await row.waitFor();
    expect(await row.innerText()).toMatch(/memory\.read[\s\S]*memory\.write/);
    await screenshot(page, 'connected-apps');
    await page.getByRole('button', { name: 'Disconnect Notebook agent' }).click();
    await page.getByText('Disconnected Notebook agent.').waitFor();
    await expect(client.listTools()).rejects.toThrow();
    await client.close().catch(() => {});
    // The browser session survives the disconnect.
    expect(await heading('Connected applications').isVisible()).toBe(true);
    expect(tab.foreign.filter((u) => !u.startsWith(oauth.redirectUrl))).toEqual([]);
  });

  it("allows an external identity provider's application that waits for the user's approval", async () => {
    // What core/oauth/external.ts records when such an application's first token arrives.
    await sql.query(`insert into oauth_connected_app (id, account_id, client_id, client_name, scopes) values (gen_random_uuid(), $1, 'ext-notes', null, '{}')`, [alice.id]);
    const { page } = tab;
    await page.goto('/apps');
    await page.getByRole('heading', { name: 'Waiting for your approval' }).waitFor();
    await page.getByRole('button', { name: 'Allow ext-notes' }).click();
    await page.getByText('Allowed ext-notes.').waitFor();
    await page.getByRole('row', { name: /ext-notes/ }).waitFor();
    expect(await sql.query(`select scopes from oauth_connected_app where client_id = 'ext-notes'`)).toEqual([{ scopes: ['memory.read'] }]);
  });

  it('changes the password with the current one; other sessions are signed out, this one stays', async () => {
    const dave = await createTestAccount(db.orm);
    const here = await openConsole(browser, stack.baseUrl);
    const there = await openConsole(browser, stack.baseUrl);
    await signInThroughConsole(there.page, dave);
    await signInThroughConsole(here.page, dave, '/account');
    const { page } = here;
    const form = page.getByRole('region', { name: 'Change password' });
    const fresh = 'a new passphrase for dave only';
    await form.getByLabel('Current password').fill('not the current password');
    await form.getByLabel('New password', { exact: true }).fill(fresh);
    await form.getByLabel('New password again').fill(fresh);
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('alert').filter({ hasText: 'The current password is not correct. (forbidden)' }).waitFor();
    await form.getByLabel('Current password').fill(dave.password);
    await form.getByLabel('New password', { exact: true }).fill(fresh);
    await form.getByLabel('New password again').fill(fresh);
    await form.getByRole('button', { name: 'Change password' }).click();
    await form.getByRole('status').filter({ hasText: 'Password changed. 1 other session was signed out.' }).waitFor();
    await screenshot(page, 'password-change');
    await there.page.reload();
    await there.page.getByRole('heading', { name: 'Sign in to Cairn' }).waitFor();
    await page.reload();
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    expect((await api.post('/v1/auth/login', { body: { email: dave.email, password: fresh } })).status).toBe(200);
    expect(here.problems).toEqual([]);
    await here.context.close();
    await there.context.close();
  });

  it('deletes an account only after the exact email is typed', async () => {
    const bob = await createTestAccount(db.orm);
    const own = await openConsole(browser, stack.baseUrl);
    const { page } = own;
    await signInThroughConsole(page, bob, '/account');
    await page.getByRole('heading', { name: 'Account', level: 1 }).waitFor();
    const confirm = page.getByLabel(`Type ${bob.email} to confirm`);
    const button = page.getByRole('button', { name: 'Delete account permanently' });
    await confirm.fill(bob.email.toUpperCase());
    expect(await button.isDisabled()).toBe(true);
    expect(await confirm.getAttribute('aria-invalid')).toBe('true');
    await confirm.fill(bob.email);
    await screenshot(page, 'account');
    await button.click();
    await page.getByRole('heading', { name: 'Account deleted' }).waitFor({ timeout: 30_000 });
    expect(await sql.count(`select 1 from account where id = $1`, [bob.id])).toBe(0);
    const again = await api.post('/v1/auth/login', { body: { email: bob.email, password: bob.password } });
    expect(again.status).toBe(401);
    expect(own.problems).toEqual([]);
    await own.context.close();
  });

  it('offers only retry and sign-out to a deletion_pending session, and the retry completes the deletion', async () => {
    const carol = await createTestAccount(db.orm);
    const own = await openConsole(browser, stack.baseUrl);
    const { page } = own;
    await signInThroughConsole(page, carol);
    // The state a deletion leaves when its workflow did not finish (markDeletionPending ran, cleanup did not).
    await sql.query(`update account set state = 'deletion_pending' where id = $1`, [carol.id]);
    await page.reload();
    await page.getByRole('heading', { name: 'Account deletion did not finish' }).waitFor();
    expect(await page.getByRole('navigation', { name: 'Console' }).count()).toBe(0);
    const buttons = await page.getByRole('button').allInnerTexts();
    expect(buttons).toEqual(['Sign out', 'Retry deletion', 'Sign out']);
    await screenshot(page, 'deletion-pending');
    await page.getByRole('button', { name: 'Retry deletion' }).click();
    await page.getByRole('heading', { name: 'Sign in to Cairn' }).waitFor({ timeout: 30_000 });
    expect(await sql.count(`select 1 from account where id = $1`, [carol.id])).toBe(0);
    expect(own.problems).toEqual([]);
    await own.context.close();
  });

  it('raised no script error, CSP refusal or third-party request on any page', () => {
    expect(tab.problems).toEqual([]);
  });
});

/** A CLI session for alice (the device flow over HTTP), used where a test needs account management without the page. */
async function cliToken(): Promise<string> {
  const cookie = (await tab.context.cookies()).find((c) => c.name === 'service_session')!.value;
  const device: Json = await api.post('/v1/auth/cli/device', { body: {} });
  await api.post('/v1/auth/cli/device/approve', { as: { cookie }, body: { userCode: device.body.userCode } });
  const token = await api.post('/v1/auth/cli/token', { body: { deviceCode: device.body.deviceCode } });
  return token.body.cliSession.token as string;
}
