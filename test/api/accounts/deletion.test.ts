import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../../helpers/services.ts';
import {
  ApiClient,
  badCsrfVariants,
  cliSignIn,
  createKey,
  createTestAccount,
  expectCookieCleared,
  expectError,
  sha256,
  signIn,
  sqlClient,
  type Sql,
} from '../../helpers/accounts.ts';

// DELETE /v1/account (spec 2.1, 3.1 account session rows, 4.2): confirmation rules, credentials, the
// account deletion workflow through the real Temporal server and worker, and the deletion_pending
// recovery path.

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let client: ApiClient;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  worker = await startWorker({ orm: db.orm, taskQueue });
  api = await startApi({ orm: db.orm, temporal, taskQueue, env: { ACCOUNT_DELETION_WAIT_MS: '15000' } });
  client = new ApiClient(api.baseUrl);
});
afterAll(async () => {
  await api?.close();
  await worker?.stop();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const deleteAccount = (cookie: string, confirmation: unknown, opts: { csrf?: boolean; headers?: Record<string, string> } = {}) =>
  client.delete('/v1/account', { as: { cookie }, body: { confirmation }, ...opts });

/** Rows that belong to the account, table by table. */
async function footprint(accountId: string) {
  const tables = [
    'account',
    'browser_session',
    'cli_session',
    'cli_device_authorization',
    'api_key',
    'ingest_job',
    'credit_balance',
    'credit_ledger',
  ];
  const out: Record<string, number> = {};
  for (const t of tables) {
    out[t] = await sql.count(`select 1 from ${t} where ${t === 'account' ? 'id' : 'account_id'} = $1`, [accountId]);
  }
  return out;
}

/** An account with every kind of credential and some owned data. */
async function populatedAccount() {
  const account = await createTestAccount(db.orm);
  const cookie = await signIn(client, account);
  const secondCookie = await signIn(client, account);
  const cli = await cliSignIn(client, cookie);
  const key = await createKey(client, { cookie }, { scopes: ['ingest'] });
  // An approved but not yet exchanged device code.
  const device = await client.post('/v1/auth/cli/device', { body: {} });
  expect((await client.post('/v1/auth/cli/device/approve', { as: { cookie }, body: { userCode: device.body.userCode } })).status).toBe(200);
  await sql.query(`insert into ingest_job (id, account_id, kind, status) values ($1, $2, 'url', 'queued')`, [randomUUID(), account.id]);
  // Reading the overview opens the credit balance and its ledger.
  expect((await client.get('/v1/account/overview', { as: { cookie } })).status).toBe(200);
  return { account, cookie, secondCookie, cli, key };
}

async function expectIntact(a: Awaited<ReturnType<typeof populatedAccount>>) {
  const [row] = await sql.query('select state from account where id = $1', [a.account.id]);
  expect(row?.state).toBe('active');
  expect((await client.get('/v1/auth/session', { as: { cookie: a.cookie } })).body.accountState).toBe('active');
  expect((await client.get('/v1/access', { as: { bearer: a.key.secret } })).status).toBe(200);
  expect((await client.get('/v1/auth/cli/session', { as: { bearer: a.cli } })).status).toBe(200);
}

describe('refused deletions leave the account intact', () => {
  it('a confirmation that is not exactly the email (other address, upper-cased, padded) is 400', async () => {
    const a = await populatedAccount();
    const other = await createTestAccount(db.orm);
    for (const confirmation of ['someone@example.com', a.account.email.toUpperCase(), other.email]) {
      const res = await deleteAccount(a.cookie, confirmation);
      expect(res.status, confirmation).toBe(400);
      expectError(res, 400, 'validation_error');
      expect(res.setCookies).toEqual([]);
    }
    for (const body of [{}, { confirmation: 'not an email' }, { confirmation: a.account.email, accountId: a.account.id }]) {
      expectError(await client.delete('/v1/account', { as: { cookie: a.cookie }, body }), 400, 'validation_error');
    }
    await expectIntact(a);
  });

  it("another account's session cannot delete this account by naming its email", async () => {
    const victim = await populatedAccount();
    const attacker = await populatedAccount();
    const res = await deleteAccount(attacker.cookie, victim.account.email);
    expectError(res, 400, 'validation_error');
    await expectIntact(victim);
    await expectIntact(attacker);
  });

  it('CLI tokens, API keys and no credential are refused with 401', async () => {
    const a = await populatedAccount();
    const body = { confirmation: a.account.email };
    for (const as of [{ bearer: a.cli }, { bearer: a.key.secret }]) {
      expectError(await client.delete('/v1/account', { as, body }), 401, 'unauthorized');
    }
    expectError(await client.delete('/v1/account', { body }), 401, 'unauthorized');
    await expectIntact(a);
  });

  it('a browser session without the CSRF header or an allowed Origin is refused with 403', async () => {
    const a = await populatedAccount();
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await deleteAccount(a.cookie, a.account.email, { csrf: false, headers: variant.headers });
      expect(res.status, variant.label).toBe(403);
      expectError(res, 403, 'forbidden');
    }
    await expectIntact(a);
  });
});

describe('successful deletion', () => {
  it('answers 200 deleted, clears the cookie and removes the account with every credential', async () => {
    const a = await populatedAccount();
    const bystander = await populatedAccount();
    const before = await footprint(a.account.id);
    expect(before).toEqual({
      account: 1,
      browser_session: 2,
      cli_session: 1,
      cli_device_authorization: 2,
      api_key: 1,
      ingest_job: 1,
      credit_balance: 1,
      credit_ledger: expect.any(Number),
    });
    expect(before.credit_ledger).toBeGreaterThan(0);
    const bystanderBefore = await footprint(bystander.account.id);

    const res = await deleteAccount(a.cookie, a.account.email);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toStrictEqual({ schemaVersion: 'service-account-deletion-v1', status: 'deleted' });
    expectCookieCleared(res);

    expect(await footprint(a.account.id)).toEqual({
      account: 0,
      browser_session: 0,
      cli_session: 0,
      cli_device_authorization: 0,
      api_key: 0,
      ingest_job: 0,
      credit_balance: 0,
      credit_ledger: 0,
    });
    expect(await sql.count('select 1 from account where email_normalized = $1', [a.account.email.toLowerCase()])).toBe(0);

    // Every credential is dead.
    for (const cookie of [a.cookie, a.secondCookie]) {
      expect((await client.get('/v1/auth/session', { as: { cookie } })).body.accountState).toBe('signed_out');
    }
    expectError(await client.get('/v1/auth/cli/session', { as: { bearer: a.cli } }), 401, 'unauthorized');
    expectError(await client.get('/v1/access', { as: { bearer: a.key.secret } }), 401, 'unauthorized');
    expectError(
      await client.post('/v1/auth/login', { body: { email: a.account.email, password: a.account.password } }),
      401,
      'unauthorized',
    );

    // Nobody else lost anything.
    expect(await footprint(bystander.account.id)).toEqual(bystanderBefore);
    await expectIntact(bystander);
  });

  it('the email can be registered again afterwards, as a new account', async () => {
    const a = await createTestAccount(db.orm);
    const cookie = await signIn(client, a);
    expect((await deleteAccount(cookie, a.email)).status).toBe(200);
    const again = await createTestAccount(db.orm, { email: a.email });
    expect(again.id).not.toBe(a.id);
    await signIn(client, again);
  });
});

describe('deletion that cannot complete: deletion_pending', () => {
  it('503 account_deletion_pending, recovery-only authority, then a retry deletes', async () => {
    const a = await populatedAccount();
    const fn = `fail_api_key_delete_${a.account.id.replaceAll('-', '')}`;
    // Final cleanup fails for this account only: deleting its API keys raises.
    await sql.query(`create function ${fn}() returns trigger language plpgsql as $$
      begin
        if old.account_id = '${a.account.id}' then raise exception 'api_key cleanup blocked by the test'; end if;
        return old;
      end $$`);
    await sql.query(`create trigger ${fn} before delete on api_key for each row execute function ${fn}()`);
    try {
      const res = await deleteAccount(a.cookie, a.account.email);
      expectError(res, 503, 'account_deletion_pending');
      expect(res.setCookies).toEqual([]);

      const [row] = await sql.query('select state from account where id = $1', [a.account.id]);
      expect(row.state).toBe('deletion_pending');

      const status = await client.get('/v1/auth/session', { as: { cookie: a.cookie } });
      expect(status.status).toBe(200);
      expect(status.body).toStrictEqual({
        schemaVersion: 'service-auth-session-v2',
        signedIn: true,
        accountState: 'deletion_pending',
        account: { email: a.account.email, displayName: null },
        session: { issuedAt: expect.any(String), expiresAt: expect.any(String) },
        linkedProviders: null,
      });

      // Ordinary operations are refused to the session; every other credential is dead.
      expectError(await client.get('/v1/account/api-keys', { as: { cookie: a.cookie } }), 403, 'account_deletion_pending');
      expectError(await client.get('/v1/account/overview', { as: { cookie: a.cookie } }), 403, 'account_deletion_pending');
      expectError(
        await client.post('/v1/account/api-keys', { as: { cookie: a.cookie }, body: { name: 'sneaky' } }),
        403,
        'account_deletion_pending',
      );
      expectError(await client.get('/v1/access', { as: { bearer: a.key.secret } }), 401, 'unauthorized');
      expectError(await client.get('/v1/auth/cli/session', { as: { bearer: a.cli } }), 401, 'unauthorized');
      expect(await sql.count('select 1 from api_key where account_id = $1 and revoked_at is null', [a.account.id])).toBe(0);

      // Signing out is allowed (here: the second session; the first one retries below).
      const out = await client.delete('/v1/auth/session', { as: { cookie: a.secondCookie } });
      expect(out.status).toBe(200);
      expect(out.body).toStrictEqual({ schemaVersion: 'service-auth-session-v2', ok: true });
      expectCookieCleared(out);
      expect((await client.get('/v1/auth/session', { as: { cookie: a.secondCookie } })).body.accountState).toBe('signed_out');
      const [ended] = await sql.query('select ended_at from browser_session where token_hash = $1', [sha256(a.secondCookie)]);
      expect(ended.ended_at).toBeInstanceOf(Date);

      // Retrying while cleanup still fails: still pending, nothing lost.
      expectError(await deleteAccount(a.cookie, a.account.email), 503, 'account_deletion_pending');
      expect(await sql.count('select 1 from account where id = $1', [a.account.id])).toBe(1);
    } finally {
      await sql.query(`drop trigger if exists ${fn} on api_key`);
      await sql.query(`drop function if exists ${fn}()`);
    }

    // The confirmation rule still holds for a retry.
    expectError(await deleteAccount(a.cookie, 'wrong@example.com'), 400, 'validation_error');

    const retry = await deleteAccount(a.cookie, a.account.email);
    expect(retry.status, JSON.stringify(retry.body)).toBe(200);
    expect(retry.body).toStrictEqual({ schemaVersion: 'service-account-deletion-v1', status: 'deleted' });
    expectCookieCleared(retry);
    expect(await footprint(a.account.id)).toMatchObject({ account: 0, browser_session: 0, api_key: 0, cli_session: 0 });
    expect((await client.get('/v1/auth/session', { as: { cookie: a.cookie } })).body.accountState).toBe('signed_out');
  });
});
