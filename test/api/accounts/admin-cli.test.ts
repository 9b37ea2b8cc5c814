import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdmin } from '../../helpers/admin.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  createKey,
  expectError,
  signIn,
  sqlClient,
  uniqueEmail,
  type Json,
  type Sql,
} from '../../helpers/accounts.ts';

// The operator's account commands (`npm run admin -- account create|list|disable`), run as the real
// process against this file's database, checked through its JSON output, the database and the API.

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const admin = (...args: string[]) => runAdmin(db.url, ...args);

const SUMMARY_KEYS = [
  'createdAt',
  'disabled',
  'displayName',
  'email',
  'id',
  'ingestDailyLimit',
  'ingestMonthlyLimit',
  'monthlyCredits',
  'onboardingCredits',
  'queryDailyLimit',
  'queryMonthlyLimit',
  'state',
].sort();

const first = { email: uniqueEmail('operator'), password: 'an operator chosen password' };
const second = { email: uniqueEmail('second'), password: 'another long password!' };

describe('admin account commands', () => {
  it('account create prints the account as JSON, stores an argon2id hash, and the account can sign in', async () => {
    const run = await admin('account', 'create', '--email', first.email, '--password', first.password);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n')).toHaveLength(1);
    expect(Object.keys(run.json).sort()).toEqual(SUMMARY_KEYS);
    expect(run.json).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      email: first.email,
      displayName: null,
      state: 'active',
      disabled: false,
      // The configured defaults (DEFAULT_MONTHLY_CREDITS etc.).
      monthlyCredits: 1000,
      onboardingCredits: 100,
    });
    expect(run.stdout).not.toContain(first.password);

    const [row] = await sql.query('select password_hash, email_normalized from account where id = $1', [run.json.id]);
    expect(row.email_normalized).toBe(first.email.toLowerCase());
    expect(row.password_hash).toMatch(/^\$argon2id\$/);
    expect(row.password_hash).not.toContain(first.password);

    await signIn(client, first);
  });

  it('account create takes a display name, credits and limits', async () => {
    const run = await admin(
      'account', 'create', '--email', second.email, '--password', second.password, '--display-name', 'Second Op',
      '--monthly-credits', '5', '--onboarding-credits', '0', '--query-daily-limit', '3', '--ingest-monthly-limit', '9',
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({
      email: second.email,
      displayName: 'Second Op',
      monthlyCredits: 5,
      onboardingCredits: 0,
      queryDailyLimit: 3,
      ingestMonthlyLimit: 9,
    });
  });

  it('limits set changes the OCR preview budgets of an account (pages), as /v1/access then reports them', async () => {
    const run = await admin('limits', 'set', '--email', second.email, '--ocr-preview-max-pages', '3', '--ocr-preview-daily-pages', '30');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toEqual({ email: second.email, changed: { ocrPreviewMaxPages: 3, ocrPreviewDailyPages: 30 } });
    const [row] = await sql.query('select ocr_preview_max_pages, ocr_preview_daily_pages from account where email_normalized = $1', [second.email.toLowerCase()]);
    expect(row).toEqual({ ocr_preview_max_pages: 3, ocr_preview_daily_pages: 30 });
  });

  it('a duplicate email (in any case) exits non-zero with account_exists and adds no row', async () => {
    const run = await admin('account', 'create', '--email', first.email.toUpperCase(), '--password', 'yet another long password');
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('account_exists');
    expect(await sql.count('select 1 from account where email_normalized = $1', [first.email.toLowerCase()])).toBe(1);
    // The original password still signs in.
    await signIn(client, first);
  });

  it('a wrong command line exits 64 and creates nothing', async () => {
    const before = await sql.count('select 1 from account');
    const runs = await Promise.all([
      admin('account', 'create', '--email', uniqueEmail('short'), '--password', 'x'.repeat(14)),
      admin('account', 'create', '--email', uniqueEmail('flag'), '--password', 'a long enough password', '--role', 'admin'),
    ]);
    for (const run of runs) {
      expect(run.code, run.stderr).toBe(64);
      expect(run.stdout).toBe('');
    }
    expect(runs[0]!.stderr).toContain('--password');
    expect(await sql.count('select 1 from account')).toBe(before);
  });

  it('account disable stops sign-in and every credential of that account; unknown emails are not_found', async () => {
    const cookie = await signIn(client, second);
    const key = await createKey(client, { cookie }, { scopes: ['ingest'] });
    expect((await client.get('/v1/access', { as: { bearer: key.secret } })).status).toBe(200);

    const [run, ghost] = await Promise.all([
      admin('account', 'disable', '--email', second.email),
      admin('account', 'disable', '--email', uniqueEmail('ghost')),
    ]);
    expect(run.code, run.stderr).toBe(0);
    expect(Object.keys(run.json).sort()).toEqual(SUMMARY_KEYS);
    expect(run.json).toMatchObject({ email: second.email, disabled: true, state: 'active' });
    const [row] = await sql.query('select disabled_at from account where email_normalized = $1', [second.email.toLowerCase()]);
    expect(row.disabled_at).toBeInstanceOf(Date);
    expect(ghost.code).not.toBe(0);
    expect(ghost.stderr).toContain('not_found');

    expectError(await client.post('/v1/auth/login', { body: second }), 401, 'unauthorized');
    expectError(await client.get('/v1/access', { as: { bearer: key.secret } }), 401, 'unauthorized');
    expect((await client.get('/v1/auth/session', { as: { cookie } })).body.accountState).toBe('signed_out');
    // The other account is untouched.
    await signIn(client, first);
  });

  it('account list prints every account, oldest first, with its state', async () => {
    const run = await admin('account', 'list');
    expect(run.code, run.stderr).toBe(0);
    expect(Object.keys(run.json)).toEqual(['accounts']);
    expect(run.json.accounts.map((a: Json) => [a.email, a.disabled])).toEqual([
      [first.email, false],
      [second.email, true],
    ]);
    for (const a of run.json.accounts) expect(Object.keys(a).sort()).toEqual(SUMMARY_KEYS);
    expect(run.stdout).not.toMatch(/argon2|password/i);
  });

  it('account link-external links a provider subject to an account (MCP_AUTH_ISSUER or --issuer)', async () => {
    const run = await admin('account', 'link-external', '--email', first.email, '--subject', 'idp|42', '--issuer', 'https://idp.example/tenant/');
    expect(run.code, run.stderr).toBe(0);
    expect(run.json).toMatchObject({ issuer: 'https://idp.example/tenant', subject: 'idp|42', accountId: expect.any(String) });
    expect(await sql.query('select issuer, subject from external_identity')).toEqual([{ issuer: 'https://idp.example/tenant', subject: 'idp|42' }]);
    const noIssuer = await admin('account', 'link-external', '--email', first.email, '--subject', 'idp|43');
    expect(noIssuer.code).toBe(64);
    expect(noIssuer.stderr).toContain('--issuer');
    const ghost = await admin('account', 'link-external', '--email', uniqueEmail('ghost'), '--subject', 'idp|44', '--issuer', 'https://idp.example/tenant');
    expect(ghost.stderr).toContain('not_found');
  });
});
