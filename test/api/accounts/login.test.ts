import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { disableAccount } from '../../../core/auth/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  badCsrfVariants,
  createTestAccount,
  expectError,
  sessionSetCookie,
  sha256,
  signIn,
  sqlClient,
  uniqueEmail,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';

// POST /v1/auth/login (spec 2.1 LoginRequest/AuthResponse, 3.1 signed_out -> active, 4.1, 8 password length).

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
  alice = await createTestAccount(db.orm, { displayName: 'Alice' });
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const sessionsOf = (accountId: string) => sql.count('select 1 from browser_session where account_id = $1', [accountId]);
const login = (email: string, password: string, headers?: Record<string, string>) =>
  client.post('/v1/auth/login', { body: { email, password }, ...(headers ? { csrf: false, headers } : {}) });

describe('successful sign-in', () => {
  it('answers 200 AuthResponse with exactly the closed key sets', async () => {
    const res = await login(alice.email, alice.password);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['account', 'auth', 'schemaVersion', 'session']);
    expect(Object.keys(res.body.account).sort()).toEqual(['displayName', 'email']);
    expect(Object.keys(res.body.session).sort()).toEqual(['expiresAt', 'issuedAt']);
    expect(Object.keys(res.body.auth).sort()).toEqual(['email', 'mode', 'provider']);
    expect(res.body).toEqual({
      schemaVersion: 'service-email-auth-v1',
      account: { email: alice.email, displayName: 'Alice' },
      session: { issuedAt: expect.any(String), expiresAt: expect.any(String) },
      auth: { provider: 'email', email: alice.email, mode: 'login' },
    });
    const issued = Date.parse(res.body.session.issuedAt);
    const expires = Date.parse(res.body.session.expiresAt);
    expect(Math.abs(issued - Date.now())).toBeLessThan(60_000);
    // SESSION_LIFETIME_HOURS defaults to 168.
    expect(expires - issued).toBe(168 * 3_600_000);
  });

  it('sets an HttpOnly, SameSite=Lax, Path=/ session cookie without Secure on http, expiring with the session', async () => {
    const res = await login(alice.email, alice.password);
    expect(res.status).toBe(200);
    const cookie = sessionSetCookie(res)!;
    expect(cookie).toBeDefined();
    expect(cookie.value.length).toBeGreaterThanOrEqual(40);
    expect(cookie.attributes.has('httponly')).toBe(true);
    expect(cookie.attributes.get('samesite')?.toLowerCase()).toBe('lax');
    expect(cookie.attributes.get('path')).toBe('/');
    expect(cookie.attributes.has('secure')).toBe(false);
    expect(cookie.attributes.has('domain')).toBe(false);
    // Expires has one-second resolution.
    const expires = new Date(cookie.attributes.get('expires')!).getTime();
    expect(Math.abs(expires - Date.parse(res.body.session.expiresAt))).toBeLessThan(1000);
  });

  it('marks the cookie Secure when PUBLIC_BASE_URL is https', async () => {
    const secureApi = await startApi({ orm: db.orm, temporal, env: { PUBLIC_BASE_URL: 'https://cairn.example.com' } });
    try {
      const res = await new ApiClient(secureApi.baseUrl).post('/v1/auth/login', {
        body: { email: alice.email, password: alice.password },
      });
      expect(res.status).toBe(200);
      const cookie = sessionSetCookie(res)!;
      expect(cookie.attributes.has('secure')).toBe(true);
      expect(cookie.attributes.has('httponly')).toBe(true);
      expect(cookie.attributes.get('samesite')?.toLowerCase()).toBe('lax');
      expect(cookie.attributes.get('path')).toBe('/');

      // Signing out clears it with the same Secure attribute.
      const out = await new ApiClient(secureApi.baseUrl).delete('/v1/auth/session', { as: { cookie: cookie.value } });
      expect(out.status).toBe(200);
      const cleared = sessionSetCookie(out)!;
      expect(cleared.value).toBe('');
      expect(cleared.attributes.has('secure')).toBe(true);
    } finally {
      await secureApi.close();
    }
  });

  it('stores the session token only as its SHA-256 digest', async () => {
    const before = await sessionsOf(alice.id);
    const cookie = await signIn(client, alice);
    expect(await sessionsOf(alice.id)).toBe(before + 1);
    const rows = await sql.query('select token_hash, row_to_json(s)::text as row from browser_session s where account_id = $1', [
      alice.id,
    ]);
    const mine = rows.filter((r) => r.token_hash === sha256(cookie));
    expect(mine).toHaveLength(1);
    expect(mine[0].token_hash).not.toBe(cookie);
    for (const r of rows) expect(r.row).not.toContain(cookie);
    // The cookie is the credential: it signs the browser in.
    const status = await client.get('/v1/auth/session', { as: { cookie } });
    expect(status.body).toMatchObject({ signedIn: true, accountState: 'active', account: { email: alice.email } });
  });

  it('matches the email case-insensitively and answers with the address as registered', async () => {
    const res = await login(alice.email.toUpperCase(), alice.password);
    expect(res.status).toBe(200);
    expect(res.body.account.email).toBe(alice.email);
    expect(res.body.auth.email).toBe(alice.email);
  });

  it('accepts passwords of exactly 15 and exactly 128 characters', async () => {
    for (const length of [15, 128]) {
      const account = await createTestAccount(db.orm, { password: 'p'.repeat(length - 1) + 'Z' });
      const res = await login(account.email, account.password);
      expect(res.status, `password of ${length}`).toBe(200);
      expect(sessionSetCookie(res)?.value).toBeTruthy();
    }
  });
});

describe('failed sign-in', () => {
  it('wrong password and unknown email give identical 401 bodies and no session', async () => {
    const before = await sessionsOf(alice.id);
    const wrong = await login(alice.email, 'not the right password at all');
    const unknown = await login(uniqueEmail('nobody'), 'not the right password at all');
    for (const res of [wrong, unknown]) {
      expectError(res, 401, 'unauthorized');
      expect(sessionSetCookie(res)).toBeUndefined();
    }
    expect(wrong.body.error.requestId).not.toBe(unknown.body.error.requestId);
    const strip = (b: { error: Record<string, unknown> }) => ({ ...b.error, requestId: undefined });
    expect(strip(wrong.body)).toEqual(strip(unknown.body));
    expect(await sessionsOf(alice.id)).toBe(before);
  });

  it('a disabled account cannot sign in, with the same 401 as a wrong password', async () => {
    const bob = await createTestAccount(db.orm);
    await signIn(client, bob);
    await disableAccount(db.orm.em.fork(), bob.email);
    const before = await sessionsOf(bob.id);
    const res = await login(bob.email, bob.password);
    expectError(res, 401, 'unauthorized');
    const wrong = await login(alice.email, 'not the right password at all');
    expect(res.body.error.message).toBe(wrong.body.error.message);
    expect(await sessionsOf(bob.id)).toBe(before);
  });

  it('passwords of 15 and 128 characters pass validation (401 when wrong, not 400)', async () => {
    for (const length of [15, 128]) {
      const res = await login(alice.email, 'x'.repeat(length));
      expectError(res, 401, 'unauthorized');
    }
  });

  it('passwords of 14 and 129 characters are rejected with 400 validation_error', async () => {
    for (const length of [14, 129]) {
      const res = await login(alice.email, 'x'.repeat(length));
      expectError(res, 400, 'validation_error');
      expect(sessionSetCookie(res)).toBeUndefined();
    }
  });

  it('rejects unknown fields, a missing field and a malformed email with 400 validation_error', async () => {
    const bodies: unknown[] = [
      { email: alice.email, password: alice.password, remember: true },
      { email: alice.email },
      { password: alice.password },
      { email: 'not-an-email', password: alice.password },
      { email: alice.email, password: 123456789012345 },
    ];
    const before = await sessionsOf(alice.id);
    for (const body of bodies) {
      const res = await client.post('/v1/auth/login', { body });
      expectError(res, 400, 'validation_error');
    }
    // The correct credentials plus an unknown field did not sign in.
    expect(await sessionsOf(alice.id)).toBe(before);
  });

  it('requires the CSRF header and an allowed Origin (403, no session created)', async () => {
    const before = await sessionsOf(alice.id);
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await login(alice.email, alice.password, variant.headers);
      expect(res.status, variant.label).toBe(403);
      expectError(res, 403, 'forbidden');
      expect(sessionSetCookie(res), variant.label).toBeUndefined();
    }
    expect(await sessionsOf(alice.id)).toBe(before);
  });
});

describe('throttling of failed sign-ins', () => {
  // Client addresses come from X-Forwarded-For through the trusted loopback proxy (TRUST_PROXY).
  const from = (address: string) => ({ headers: { 'x-forwarded-for': address } });
  const throttledApi = (env: Record<string, string>) => startApi({ orm: db.orm, temporal, env: { TRUST_PROXY: 'loopback', ...env } });
  const blockOf = async (email: string, address: string) =>
    (await sql.query<{ ms: number }>(
      `select extract(epoch from blocked_until - now()) * 1000 as ms from auth_throttle where key = $1`,
      [`login:pair:${email.toLowerCase()}:${address}`],
    )).map((r) => Number(r.ms))[0] ?? 0;
  const lift = () => sql.query('update auth_throttle set blocked_until = now()');
  beforeEach(() => sql.query('delete from auth_throttle'));

  it('guessing from one address never locks the owner out at another, even with the right password', async () => {
    const throttled = await throttledApi({ LOGIN_FREE_FAILURES: '3' });
    try {
      const c = new ApiClient(throttled.baseUrl);
      const carol = await createTestAccount(db.orm);
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) {
        const res = await c.post('/v1/auth/login', { body: { email: carol.email, password: `wrong password number ${i}` }, ...from('203.0.113.7') });
        statuses.push(res.status);
      }
      expect(statuses).toEqual([401, 401, 401, 429]);
      const blocked = await c.post('/v1/auth/login', { body: { email: carol.email, password: carol.password }, ...from('203.0.113.7') });
      expectError(blocked, 429, 'rate_limited');
      expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(sessionSetCookie(blocked)).toBeUndefined();
      expect(await sessionsOf(carol.id)).toBe(0);
      // The owner, at their own address, signs in at once.
      const owner = await c.post('/v1/auth/login', { body: { email: carol.email, password: carol.password }, ...from('198.51.100.9') });
      expect(owner.status, JSON.stringify(owner.body)).toBe(200);
      expect(await sessionsOf(carol.id)).toBe(1);
    } finally {
      await throttled.close();
    }
  });

  it('after the free failures a pair waits, and the wait doubles (1 s, 2 s, ...) up to LOGIN_BACKOFF_MAX_SECONDS', async () => {
    const throttled = await throttledApi({ LOGIN_FREE_FAILURES: '2', LOGIN_BACKOFF_MAX_SECONDS: '3' });
    try {
      const c = new ApiClient(throttled.baseUrl);
      const dave = await createTestAccount(db.orm);
      const fail = () => c.post('/v1/auth/login', { body: { email: dave.email, password: 'definitely wrong password' }, ...from('203.0.113.8') });
      expect((await fail()).status).toBe(401);
      expect(await blockOf(dave.email, '203.0.113.8')).toBeLessThanOrEqual(0);
      const waits: number[] = [];
      for (let i = 0; i < 3; i++) {
        expect((await fail()).status).toBe(401);
        const refused = await fail();
        expectError(refused, 429, 'rate_limited');
        waits.push(Number(refused.headers.get('retry-after')));
        await lift(); // as time would
      }
      expect(waits).toEqual([1, 2, 3]);
    } finally {
      await throttled.close();
    }
  });

  it('is atomic: of many concurrent attempts only the free ones reach the password check', async () => {
    // The address rule's wait is a whole window, so nothing here depends on timing.
    const throttled = await throttledApi({ LOGIN_MAX_FAILURES_PER_ADDRESS: '3' });
    try {
      const c = new ApiClient(throttled.baseUrl);
      const burst = await Promise.all(
        Array.from({ length: 20 }, (_, i) => c.post('/v1/auth/login', { body: { email: uniqueEmail('burst'), password: `concurrent guess ${i}!!` }, ...from('203.0.113.9') })),
      );
      const counts = burst.reduce<Record<number, number>>((acc, r) => ({ ...acc, [r.status]: (acc[r.status] ?? 0) + 1 }), {});
      expect(counts).toEqual({ 401: 3, 429: 17 });
    } finally {
      await throttled.close();
    }
  });

  it('a successful sign-in clears its pair', async () => {
    const throttled = await throttledApi({ LOGIN_FREE_FAILURES: '3' });
    try {
      const c = new ApiClient(throttled.baseUrl);
      const fred = await createTestAccount(db.orm);
      const fail = () => c.post('/v1/auth/login', { body: { email: fred.email, password: 'definitely wrong password' }, ...from('203.0.113.10') });
      const ok = () => c.post('/v1/auth/login', { body: { email: fred.email, password: fred.password }, ...from('203.0.113.10') });
      expect((await fail()).status).toBe(401);
      expect((await fail()).status).toBe(401);
      expect((await ok()).status).toBe(200);
      expect((await fail()).status).toBe(401);
      expect((await fail()).status).toBe(401);
      expect((await ok()).status).toBe(200);
      expect(await sessionsOf(fred.id)).toBe(2);
    } finally {
      await throttled.close();
    }
  });

  it('failures are also counted per client address across accounts (LOGIN_MAX_FAILURES_PER_ADDRESS)', async () => {
    const throttled = await throttledApi({ LOGIN_MAX_FAILURES_PER_ADDRESS: '2' });
    try {
      const c = new ApiClient(throttled.baseUrl);
      for (let i = 0; i < 2; i++) {
        const res = await c.post('/v1/auth/login', { body: { email: uniqueEmail('guess'), password: 'guessing a password' }, ...from('203.0.113.11') });
        expectError(res, 401, 'unauthorized');
      }
      const gina = await createTestAccount(db.orm);
      const blocked = await c.post('/v1/auth/login', { body: { email: gina.email, password: gina.password }, ...from('203.0.113.11') });
      expectError(blocked, 429, 'rate_limited');
      expect(blocked.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(await sessionsOf(gina.id)).toBe(0);
      // Another address is not affected.
      expect((await c.post('/v1/auth/login', { body: { email: gina.email, password: gina.password }, ...from('203.0.113.12') })).status).toBe(200);
    } finally {
      await throttled.close();
    }
  });

  it('without TRUST_PROXY a forwarded address is not believed', async () => {
    const throttled = await startApi({ orm: db.orm, temporal, env: { LOGIN_FREE_FAILURES: '1' } });
    try {
      const c = new ApiClient(throttled.baseUrl);
      const hal = await createTestAccount(db.orm);
      expect((await c.post('/v1/auth/login', { body: { email: hal.email, password: 'wrong password here' }, ...from('203.0.113.13') })).status).toBe(401);
      // A different X-Forwarded-For does not make a different client: still the same pair, which now waits.
      expect((await c.post('/v1/auth/login', { body: { email: hal.email, password: 'wrong password here' }, ...from('203.0.113.14') })).status).toBe(429);
    } finally {
      await throttled.close();
    }
  });
});
