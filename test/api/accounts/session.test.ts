import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disableAccount } from '../../../core/auth/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  badCsrfVariants,
  cliSignIn,
  createKey,
  createTestAccount,
  eventually,
  expectCookieCleared,
  expectError,
  sessionSetCookie,
  sha256,
  signIn,
  sqlClient,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';

// GET/DELETE /v1/auth/session: AuthSessionStatus combinations (spec 2.1), sign-out (3.1), idle and
// absolute expiry, CSRF on sign-out.

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
let alice: TestAccount;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
  alice = await createTestAccount(db.orm, { displayName: null });
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const SIGNED_OUT = {
  schemaVersion: 'service-auth-session-v2',
  signedIn: false,
  accountState: 'signed_out',
  account: null,
  session: null,
  linkedProviders: null,
};
const status = (cookie?: string) => client.get('/v1/auth/session', cookie ? { as: { cookie } } : {});
const endedAt = async (cookie: string) =>
  (await sql.query('select ended_at from browser_session where token_hash = $1', [sha256(cookie)]))[0]?.ended_at as Date | null;

describe('AuthSessionStatus', () => {
  it('signed_out: no cookie', async () => {
    const res = await status();
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual(SIGNED_OUT);
  });

  it('signed_out: an unknown, a too-short or a garbage cookie (not an error)', async () => {
    for (const cookie of ['A'.repeat(43), 'short', 'x'.repeat(200)]) {
      const res = await status(cookie);
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual(SIGNED_OUT);
    }
  });

  it('active: account, session times of the sign-in and linked providers', async () => {
    const login = await client.post('/v1/auth/login', { body: { email: alice.email, password: alice.password } });
    expect(login.status).toBe(200);
    const cookie = sessionSetCookie(login)!.value;
    const res = await status(cookie);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(
      ['account', 'accountState', 'linkedProviders', 'schemaVersion', 'session', 'signedIn'].sort(),
    );
    expect(res.body).toStrictEqual({
      schemaVersion: 'service-auth-session-v2',
      signedIn: true,
      accountState: 'active',
      account: { email: alice.email, displayName: null },
      session: login.body.session,
      linkedProviders: { google: false, github: false },
    });
  });

  it('deletion_pending: signed in, account and session present, linkedProviders null', async () => {
    const pending = await createTestAccount(db.orm, { displayName: 'Pending' });
    const cookie = await signIn(client, pending);
    await sql.query(`update account set state = 'deletion_pending' where id = $1`, [pending.id]);
    const res = await status(cookie);
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({
      schemaVersion: 'service-auth-session-v2',
      signedIn: true,
      accountState: 'deletion_pending',
      account: { email: pending.email, displayName: 'Pending' },
      session: { issuedAt: expect.any(String), expiresAt: expect.any(String) },
      linkedProviders: null,
    });
    // Recovery-only authority: ordinary account management is refused.
    expectError(await client.get('/v1/account/api-keys', { as: { cookie } }), 403, 'account_deletion_pending');
  });

  it('a disabled account reads signed_out with its old cookie', async () => {
    const bob = await createTestAccount(db.orm);
    const cookie = await signIn(client, bob);
    expect((await status(cookie)).body.signedIn).toBe(true);
    await disableAccount(db.orm.em.fork(), bob.email);
    expect((await status(cookie)).body).toStrictEqual(SIGNED_OUT);
    expectError(await client.get('/v1/account/api-keys', { as: { cookie } }), 401, 'unauthorized');
  });
});

describe('sign-out (DELETE /v1/auth/session)', () => {
  it('ends the session, clears the cookie, and the old cookie reads signed_out', async () => {
    const cookie = await signIn(client, alice);
    const res = await client.delete('/v1/auth/session', { as: { cookie } });
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({ schemaVersion: 'service-auth-session-v2', ok: true });
    expectCookieCleared(res);
    expect(await endedAt(cookie)).toBeInstanceOf(Date);
    expect((await status(cookie)).body).toStrictEqual(SIGNED_OUT);
    expectError(await client.get('/v1/account/api-keys', { as: { cookie } }), 401, 'unauthorized');
    // Signing out again is harmless: nothing left to end.
    const again = await client.delete('/v1/auth/session', { as: { cookie } });
    expect(again.status).toBe(200);
    expect(again.body).toStrictEqual({ schemaVersion: 'service-auth-session-v2', ok: false });
  });

  it('without a cookie answers ok false and still clears the cookie', async () => {
    const res = await client.delete('/v1/auth/session');
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({ schemaVersion: 'service-auth-session-v2', ok: false });
    expectCookieCleared(res);
  });

  it('ends only its own session: another session of the same account stays active', async () => {
    const first = await signIn(client, alice);
    const second = await signIn(client, alice);
    expect((await client.delete('/v1/auth/session', { as: { cookie: first } })).status).toBe(200);
    expect((await status(first)).body.accountState).toBe('signed_out');
    expect((await status(second)).body.accountState).toBe('active');
  });

  it('requires the CSRF header and an allowed Origin: 403 and the session stays active', async () => {
    const cookie = await signIn(client, alice);
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await client.delete('/v1/auth/session', { as: { cookie }, csrf: false, headers: variant.headers });
      expect(res.status, variant.label).toBe(403);
      expectError(res, 403, 'forbidden');
      expect(res.setCookies, variant.label).toEqual([]);
    }
    expect(await endedAt(cookie)).toBeNull();
    expect((await status(cookie)).body.accountState).toBe('active');
  });
});

describe('session expiry', () => {
  it('a session idle longer than SESSION_IDLE_HOURS reads signed_out and authenticates nothing', async () => {
    const idleApi = await startApi({ orm: db.orm, temporal, env: { SESSION_IDLE_HOURS: '1' } });
    try {
      const c = new ApiClient(idleApi.baseUrl);
      const idle = await signIn(c, alice);
      const recent = await signIn(c, alice);
      await sql.query(`update browser_session set last_seen_at = now() - interval '2 hours' where token_hash = $1`, [
        sha256(idle),
      ]);
      await sql.query(`update browser_session set last_seen_at = now() - interval '30 minutes' where token_hash = $1`, [
        sha256(recent),
      ]);
      const res = await c.get('/v1/auth/session', { as: { cookie: idle } });
      expect(res.status).toBe(200);
      expect(res.body).toStrictEqual(SIGNED_OUT);
      expectError(await c.get('/v1/account/api-keys', { as: { cookie: idle } }), 401, 'unauthorized');
      // Within the idle window the session is alive, and use moves last_seen_at forward.
      expect((await c.get('/v1/auth/session', { as: { cookie: recent } })).body.accountState).toBe('active');
      await eventually(
        async () =>
          (await sql.query(`select 1 from browser_session where token_hash = $1 and last_seen_at > now() - interval '5 minutes'`, [
            sha256(recent),
          ])).length === 1,
        'last_seen_at to be refreshed',
      );
    } finally {
      await idleApi.close();
    }
  });

  it('a session past its absolute expiry reads signed_out', async () => {
    const cookie = await signIn(client, alice);
    await sql.query(`update browser_session set expires_at = now() - interval '1 second' where token_hash = $1`, [sha256(cookie)]);
    expect((await status(cookie)).body).toStrictEqual(SIGNED_OUT);
    expectError(await client.get('/v1/account/overview', { as: { cookie } }), 401, 'unauthorized');
  });
});

describe('POST /v1/account/password', () => {
  const NEW = 'a brand new passphrase of some length';
  const change = (cookie: string, body: unknown, csrf?: boolean) =>
    client.post('/v1/account/password', { as: { cookie }, body, ...(csrf === undefined ? {} : { csrf }) });

  it('needs the current password; ends every other browser and CLI session; keeps this one and the API keys', async () => {
    const bob = await createTestAccount(db.orm);
    const here = await signIn(client, bob);
    const elsewhere = await signIn(client, bob);
    const cli = await cliSignIn(client, elsewhere);
    const key = await createKey(client, { cookie: here }, { name: 'stays', scopes: ['ingest'] });

    expectError(await change(here, { currentPassword: 'not the password at all', newPassword: NEW }), 403, 'forbidden');
    expectError(await change(here, { currentPassword: bob.password, newPassword: 'short' }), 400, 'validation_error');
    expectError(await change(here, { currentPassword: bob.password, newPassword: bob.password }), 400, 'validation_error');
    expectError(await change(here, { currentPassword: bob.password, newPassword: NEW }, false), 403, 'forbidden');
    expectError(await client.post('/v1/account/password', { as: { bearer: cli }, body: { currentPassword: bob.password, newPassword: NEW } }), 401, 'unauthorized');
    // Nothing changed so far: the old password still signs in.
    expect((await client.post('/v1/auth/login', { body: { email: bob.email, password: bob.password } })).status).toBe(200);

    const res = await change(here, { currentPassword: bob.password, newPassword: NEW });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body).toEqual({ schemaVersion: 'service-password-change-v1', changed: true, browserSessionsEnded: 2, cliSessionsEnded: 1 });
    expect((await status(here)).body.accountState).toBe('active');
    expect((await status(elsewhere)).body).toStrictEqual(SIGNED_OUT);
    expectError(await client.get('/v1/auth/cli/session', { as: { bearer: cli } }), 401, 'unauthorized');
    expect((await client.get('/v1/access', { as: { bearer: key.secret } })).status).toBe(200);
    expectError(await client.post('/v1/auth/login', { body: { email: bob.email, password: bob.password } }), 401, 'unauthorized');
    expect((await client.post('/v1/auth/login', { body: { email: bob.email, password: NEW } })).status).toBe(200);
  });

  it('wrong current passwords count as failed sign-ins from this address: past the free ones it is 429 even with the right one', async () => {
    const carol = await createTestAccount(db.orm);
    const cookie = await signIn(client, carol);
    const limit = api.config.auth.loginFreeFailures;
    for (let i = 0; i < limit; i++) expectError(await change(cookie, { currentPassword: `wrong guess number ${i}`, newPassword: NEW }), 403, 'forbidden');
    const refused = await change(cookie, { currentPassword: carol.password, newPassword: NEW });
    expectError(refused, 429, 'rate_limited');
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
  });
});
