import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createRateLimiter } from '../../../core/metering/rate-limit.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  badCsrfVariants,
  cliSignIn,
  createKey,
  createTestAccount,
  expectError,
  sha256,
  signIn,
  sqlClient,
  type Json,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';

// CLI device sign-in (spec 2.1 CLI records, 3.2 states, 4.1 routes).

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
let alice: TestAccount;
let aliceCookie: string;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
  alice = await createTestAccount(db.orm, { displayName: 'Alice' });
  aliceCookie = await signIn(client, alice);
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const USER_CODE = /^[A-Z0-9]{4}-[A-Z0-9]{4}$/;
const startDevice = async (body: Json = {}) => {
  const res = await client.post('/v1/auth/cli/device', { body });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body as { deviceCode: string; userCode: string; expiresAt: string; intervalSeconds: number };
};
const deviceRow = async (deviceCode: string) =>
  (await sql.query('select * from cli_device_authorization where device_code_hash = $1', [sha256(deviceCode)]))[0];
const poll = (deviceCode: string, c = client) => c.post('/v1/auth/cli/token', { body: { deviceCode } });
const approve = (userCode: string, cookie = aliceCookie) =>
  client.post('/v1/auth/cli/device/approve', { as: { cookie }, body: { userCode } });

describe('POST /v1/auth/cli/device', () => {
  it('answers 201 CliDeviceAuthorizationResponse and stores only the device code digest', async () => {
    const res = await client.post('/v1/auth/cli/device', { body: { clientName: 'laptop cli' } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(
      ['deviceCode', 'expiresAt', 'intervalSeconds', 'schemaVersion', 'userCode', 'verificationUrl'].sort(),
    );
    const b = res.body;
    expect(b.schemaVersion).toBe('service-cli-device-authorization-v1');
    expect(b.userCode).toMatch(USER_CODE);
    expect(b.deviceCode).toEqual(expect.any(String));
    expect(b.deviceCode.length).toBeGreaterThanOrEqual(40);
    expect(b.intervalSeconds).toBe(5);
    const url = new URL(b.verificationUrl);
    expect(`${url.origin}`).toBe(api.config.publicBaseUrl);
    expect(url.searchParams.get('code')).toBe(b.userCode);

    const row = await deviceRow(b.deviceCode);
    expect(row).toBeDefined();
    expect(row.device_code_hash).not.toBe(b.deviceCode);
    expect(row).toMatchObject({ user_code: b.userCode, status: 'pending', account_id: null, client_name: 'laptop cli' });
    expect(JSON.stringify(row)).not.toContain(b.deviceCode);
    // DEVICE_CODE_TTL_SECONDS defaults to 600.
    expect(new Date(row.expires_at).getTime() - new Date(row.created_at).getTime()).toBe(600_000);
    expect(new Date(row.expires_at).toISOString()).toBe(b.expiresAt);
  });

  it('issues a different device and user code every time', async () => {
    const a = await startDevice();
    const b = await startDevice();
    expect(a.deviceCode).not.toBe(b.deviceCode);
    expect(a.userCode).not.toBe(b.userCode);
  });

  it('validates clientName (1 to 80 characters) and rejects unknown fields', async () => {
    expect((await client.post('/v1/auth/cli/device', { body: {} })).status).toBe(201);
    expect((await client.post('/v1/auth/cli/device', { body: { clientName: 'c'.repeat(80) } })).status).toBe(201);
    for (const body of [{ clientName: '' }, { clientName: 'c'.repeat(81) }, { clientName: 7 }, { client: 'x' }]) {
      expectError(await client.post('/v1/auth/cli/device', { body }), 400, 'validation_error');
    }
  });
});

describe('POST /v1/auth/cli/token (polling)', () => {
  it('answers 202 pending before approval, then 429 slow_down when polled again within intervalSeconds', async () => {
    const d = await startDevice();
    const first = await poll(d.deviceCode);
    expect(first.status).toBe(202);
    expect(first.body).toStrictEqual({
      schemaVersion: 'service-cli-device-token-v1',
      status: 'pending',
      expiresAt: d.expiresAt,
      intervalSeconds: 5,
    });
    expect((await deviceRow(d.deviceCode)).last_polled_at).toBeInstanceOf(Date);

    const tooSoon = await poll(d.deviceCode);
    expectError(tooSoon, 429, 'slow_down');
    expect(tooSoon.headers.get('retry-after')).toBe('5');
    expect((await deviceRow(d.deviceCode)).status).toBe('pending');

    // Once the interval has passed (moved back in the database) the poll is answered again.
    await sql.query(`update cli_device_authorization set last_polled_at = now() - interval '6 seconds' where device_code_hash = $1`, [
      sha256(d.deviceCode),
    ]);
    expect((await poll(d.deviceCode)).status).toBe(202);
  });

  it('with DEVICE_POLL_INTERVAL_SECONDS=0 every poll is answered', async () => {
    const fast = await startApi({ orm: db.orm, temporal, env: { DEVICE_POLL_INTERVAL_SECONDS: '0' } });
    try {
      const c = new ApiClient(fast.baseUrl);
      const d = (await c.post('/v1/auth/cli/device', { body: {} })).body;
      expect(d.intervalSeconds).toBe(0);
      for (let i = 0; i < 3; i++) {
        const res = await poll(d.deviceCode, c);
        expect(res.status).toBe(202);
        expect(res.body.intervalSeconds).toBe(0);
      }
    } finally {
      await fast.close();
    }
  });

  it('exchanges an approved code once for a CLI session (200), then 400 device_code_used', async () => {
    const d = await startDevice({ clientName: 'exchange cli' });
    expect((await poll(d.deviceCode)).status).toBe(202);
    expect((await approve(d.userCode)).status).toBe(200);

    // Right after a pending poll: an approved code is exchanged without waiting for the interval.
    const res = await poll(d.deviceCode);
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['account', 'cliSession', 'schemaVersion']);
    expect(res.body).toStrictEqual({
      schemaVersion: 'service-cli-session-v1',
      cliSession: { token: expect.stringMatching(/^cairn_cli_/), expiresAt: expect.any(String) },
      account: { email: alice.email, displayName: 'Alice' },
    });
    const token: string = res.body.cliSession.token;
    // CLI_SESSION_LIFETIME_DAYS defaults to 30.
    const lifetime = Date.parse(res.body.cliSession.expiresAt) - Date.now();
    expect(lifetime).toBeGreaterThan(30 * 86_400_000 - 60_000);
    expect(lifetime).toBeLessThanOrEqual(30 * 86_400_000);

    const sessions = await sql.query('select * from cli_session where account_id = $1 and token_hash = $2', [alice.id, sha256(token)]);
    expect(sessions).toHaveLength(1);
    expect(sessions[0].client_name).toBe('exchange cli');
    expect(await sql.count('select 1 from cli_session where token_hash = $1', [token])).toBe(0);
    expect((await deviceRow(d.deviceCode)).status).toBe('consumed');

    const second = await poll(d.deviceCode);
    expectError(second, 400, 'device_code_used');
    const before = await sql.count('select 1 from cli_session where account_id = $1', [alice.id]);
    expectError(await poll(d.deviceCode), 400, 'device_code_used');
    expect(await sql.count('select 1 from cli_session where account_id = $1', [alice.id])).toBe(before);
  });

  it('two simultaneous exchanges of one approved code: exactly one session', async () => {
    const d = await startDevice();
    expect((await approve(d.userCode)).status).toBe(200);
    const before = await sql.count('select 1 from cli_session where account_id = $1', [alice.id]);
    const results = await Promise.all([poll(d.deviceCode), poll(d.deviceCode), poll(d.deviceCode)]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 400, 400]);
    for (const r of results.filter((x) => x.status === 400)) expectError(r, 400, 'device_code_used');
    expect(await sql.count('select 1 from cli_session where account_id = $1', [alice.id])).toBe(before + 1);
  });

  it('an expired code answers 400 device_code_expired and can no longer be approved', async () => {
    const d = await startDevice();
    await sql.query(`update cli_device_authorization set expires_at = now() - interval '1 second' where device_code_hash = $1`, [
      sha256(d.deviceCode),
    ]);
    expectError(await poll(d.deviceCode), 400, 'device_code_expired');
    expectError(await approve(d.userCode), 404, 'not_found');

    // Approved, then expired before the exchange: no session either.
    const e = await startDevice();
    expect((await approve(e.userCode)).status).toBe(200);
    await sql.query(`update cli_device_authorization set expires_at = now() - interval '1 second' where device_code_hash = $1`, [
      sha256(e.deviceCode),
    ]);
    const before = await sql.count('select 1 from cli_session');
    expectError(await poll(e.deviceCode), 400, 'device_code_expired');
    expect(await sql.count('select 1 from cli_session')).toBe(before);
  });

  it('an unknown device code answers 400 invalid_device_code; an empty one 400 validation_error', async () => {
    expectError(await poll('not-a-device-code-that-exists'), 400, 'invalid_device_code');
    expectError(await poll(''), 400, 'validation_error');
    expectError(await client.post('/v1/auth/cli/token', { body: { deviceCode: 'x', extra: 1 } }), 400, 'validation_error');
  });
});

describe('POST /v1/auth/cli/device/approve', () => {
  it('answers 200 CliDeviceApprovalResponse and binds the code to the signed-in account', async () => {
    const d = await startDevice();
    const res = await approve(d.userCode);
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({
      schemaVersion: 'service-cli-device-approval-v1',
      approved: true,
      userCode: d.userCode,
      expiresAt: d.expiresAt,
    });
    const row = await deviceRow(d.deviceCode);
    expect(row).toMatchObject({ status: 'approved', account_id: alice.id });
    expect(row.approved_at).toBeInstanceOf(Date);
    // A code is approved once.
    expectError(await approve(d.userCode), 404, 'not_found');
  });

  it('needs a browser session: no credential, a CLI token or an API key get 401 and the code stays pending', async () => {
    const cliToken = await cliSignIn(client, aliceCookie);
    const key = await createKey(client, { cookie: aliceCookie });
    const d = await startDevice();
    const attempts = [
      await client.post('/v1/auth/cli/device/approve', { body: { userCode: d.userCode } }),
      await client.post('/v1/auth/cli/device/approve', { as: { bearer: cliToken }, body: { userCode: d.userCode } }),
      await client.post('/v1/auth/cli/device/approve', { as: { bearer: key.secret }, body: { userCode: d.userCode } }),
    ];
    for (const res of attempts) expectError(res, 401, 'unauthorized');
    expect(await deviceRow(d.deviceCode)).toMatchObject({ status: 'pending', account_id: null });
  });

  it('needs the CSRF header and an allowed Origin: 403 and the code stays pending', async () => {
    const d = await startDevice();
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await client.post('/v1/auth/cli/device/approve', {
        as: { cookie: aliceCookie },
        body: { userCode: d.userCode },
        csrf: false,
        headers: variant.headers,
      });
      expect(res.status, variant.label).toBe(403);
      expectError(res, 403, 'forbidden');
    }
    expect(await deviceRow(d.deviceCode)).toMatchObject({ status: 'pending', account_id: null });
    expect((await poll(d.deviceCode)).status).toBe(202);
  });

  it('an unknown user code answers 404 not_found; out-of-range lengths 400', async () => {
    expectError(await approve('ZZZZ-ZZZZ'), 404, 'not_found');
    expectError(await approve(''), 400, 'validation_error');
    expectError(await approve('A'.repeat(33)), 400, 'validation_error');
  });

  it('accepts the user code as a person types it: lower case, without hyphen, with spaces', async () => {
    const forms = [
      (c: string) => c.toLowerCase(),
      (c: string) => c.replace('-', ''),
      (c: string) => c.toLowerCase().replace('-', ''),
      (c: string) => ` ${c.slice(0, 4).toLowerCase()} ${c.slice(5)} `,
    ];
    for (const form of forms) {
      const d = await startDevice();
      const typed = form(d.userCode);
      const res = await approve(typed);
      expect(res.status, `typed as ${JSON.stringify(typed)}`).toBe(200);
      expect(res.body.userCode).toBe(d.userCode);
      expect((await deviceRow(d.deviceCode)).status).toBe('approved');
    }
  });

  it('the CLI session belongs to the account that approved, not to anyone else', async () => {
    const bob = await createTestAccount(db.orm);
    const bobCookie = await signIn(client, bob);
    const token = await cliSignIn(client, bobCookie);
    const res = await client.get('/v1/auth/cli/session', { as: { bearer: token } });
    expect(res.body.account.email).toBe(bob.email);
    expect(await sql.count('select 1 from cli_session where token_hash = $1 and account_id = $2', [sha256(token), bob.id])).toBe(1);
  });
});

describe('CLI session (GET/DELETE /v1/auth/cli/session)', () => {
  it('GET answers CliAuthStatus for the token', async () => {
    const token = await cliSignIn(client, aliceCookie);
    const res = await client.get('/v1/auth/cli/session', { as: { bearer: token } });
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({
      schemaVersion: 'service-cli-auth-v1',
      signedIn: true,
      account: { email: alice.email, displayName: 'Alice' },
      expiresAt: expect.any(String),
    });
    const [row] = await sql.query('select expires_at from cli_session where token_hash = $1', [sha256(token)]);
    expect(res.body.expiresAt).toBe(new Date(row.expires_at).toISOString());
  });

  it('accepts only a CLI token: no credential, a browser cookie or an API key get 401', async () => {
    const key = await createKey(client, { cookie: aliceCookie });
    for (const as of [undefined, { cookie: aliceCookie }, { bearer: key.secret }]) {
      expectError(await client.get('/v1/auth/cli/session', as ? { as } : {}), 401, 'unauthorized');
      expectError(await client.delete('/v1/auth/cli/session', as ? { as } : {}), 401, 'unauthorized');
    }
    // The browser session was not ended by the attempt.
    expect((await client.get('/v1/auth/session', { as: { cookie: aliceCookie } })).body.signedIn).toBe(true);
  });

  it('DELETE signs the CLI out (no CSRF needed for a token); API keys made with it keep working', async () => {
    const token = await cliSignIn(client, aliceCookie);
    // A CLI token writes without x-service-csrf or Origin.
    const key = await createKey(client, { bearer: token }, { scopes: ['ingest'] });
    const browserKey = await createKey(client, { cookie: aliceCookie }, { scopes: ['query'] });

    const res = await client.delete('/v1/auth/cli/session', { as: { bearer: token } });
    expect(res.status).toBe(200);
    expect(res.body).toStrictEqual({ schemaVersion: 'service-cli-logout-v1', ok: true });
    const [row] = await sql.query('select revoked_at from cli_session where token_hash = $1', [sha256(token)]);
    expect(row.revoked_at).toBeInstanceOf(Date);

    expectError(await client.get('/v1/auth/cli/session', { as: { bearer: token } }), 401, 'unauthorized');
    expectError(await client.get('/v1/account/api-keys', { as: { bearer: token } }), 401, 'unauthorized');

    for (const k of [key, browserKey]) {
      const access = await client.get('/v1/access', { as: { bearer: k.secret } });
      expect(access.status).toBe(200);
      expect(access.body.key.id).toBe(k.id);
    }
    expect(await sql.count('select 1 from api_key where id = any($1) and revoked_at is null', [[key.id, browserKey.id]])).toBe(2);
    // The browser session is untouched too.
    expect((await client.get('/v1/auth/session', { as: { cookie: aliceCookie } })).body.accountState).toBe('active');
  });

  it('an expired CLI session is rejected with 401', async () => {
    const token = await cliSignIn(client, aliceCookie);
    await sql.query(`update cli_session set expires_at = now() - interval '1 second' where token_hash = $1`, [sha256(token)]);
    expectError(await client.get('/v1/auth/cli/session', { as: { bearer: token } }), 401, 'unauthorized');
  });

  it('signing the browser out does not end CLI sessions it approved', async () => {
    const cookie = await signIn(client, alice);
    const token = await cliSignIn(client, cookie);
    expect((await client.delete('/v1/auth/session', { as: { cookie } })).status).toBe(200);
    expect((await client.get('/v1/auth/cli/session', { as: { bearer: token } })).status).toBe(200);
  });
});

describe('device code creation, per client address', () => {
  it('is limited (429 rate_limited with retry-after) per address; other addresses are not affected', async () => {
    const limiter = createRateLimiter(db.url, 600, undefined, { deviceCodesPerHour: 3 });
    const limited = await startApi({ orm: db.orm, temporal, rateLimiter: limiter, env: { TRUST_PROXY: 'loopback' } });
    try {
      const start = (from: string) => fetch(`${limited.baseUrl}/v1/auth/cli/device`, {
        method: 'POST', headers: { 'content-type': 'application/json', 'x-forwarded-for': from }, body: '{}',
      });
      for (let i = 0; i < 3; i++) expect((await start('203.0.113.70')).status).toBe(201);
      const refused = await start('203.0.113.70');
      expect(refused.status).toBe(429);
      expect(((await refused.json()) as Json).error.code).toBe('rate_limited');
      expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await start('203.0.113.71')).status).toBe(201);
    } finally {
      await limited.close();
      await limiter.close();
    }
  });
});
