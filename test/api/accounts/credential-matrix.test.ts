import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { disableAccount } from '../../../core/auth/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  cliSignIn,
  createKey,
  createTestAccount,
  expectError,
  signIn,
  sqlClient,
  type Credential,
  type Json,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';

// The credential matrix of spec section 5 (and 4.1-4.3): which credential each route accepts, what the
// others get, and scope checks for API keys.

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
let alice: TestAccount;
const creds = {} as Record<'browser' | 'cli' | 'apiKey', Credential>;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
  alice = await createTestAccount(db.orm);
  creds.browser = { cookie: await signIn(client, alice) };
  creds.cli = { bearer: await cliSignIn(client, creds.browser.cookie) };
  const key = await createKey(client, creds.browser, {
    name: 'all scopes',
    scopes: ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'],
  });
  creds.apiKey = { bearer: key.secret };
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

type Row = { method: 'GET' | 'POST' | 'DELETE'; path: string; body?: Json; none: number; browser: number; cli: number; apiKey: number };
const someId = randomUUID();

// Expected statuses. A 4xx other than 401/403 (404 for an unknown id, 400 for a wrong confirmation) shows
// the credential was accepted and the handler ran.
const MATRIX: Row[] = [
  { method: 'GET', path: '/v1/account/api-keys', none: 401, browser: 200, cli: 200, apiKey: 401 },
  { method: 'POST', path: '/v1/account/api-keys', body: { name: 'matrix' }, none: 401, browser: 201, cli: 201, apiKey: 401 },
  { method: 'DELETE', path: `/v1/account/api-keys/${someId}`, none: 401, browser: 404, cli: 404, apiKey: 401 },
  { method: 'POST', path: `/v1/account/api-keys/${someId}/rotate`, body: {}, none: 401, browser: 404, cli: 404, apiKey: 401 },
  { method: 'GET', path: '/v1/account/overview', none: 401, browser: 200, cli: 200, apiKey: 401 },
  { method: 'GET', path: '/v1/account/usage', none: 401, browser: 200, cli: 200, apiKey: 401 },
  { method: 'DELETE', path: '/v1/account', body: { confirmation: 'someone-else@example.com' }, none: 401, browser: 400, cli: 401, apiKey: 401 },
  { method: 'POST', path: '/v1/auth/cli/device/approve', body: { userCode: 'ZZZZ-ZZZZ' }, none: 401, browser: 404, cli: 401, apiKey: 401 },
  { method: 'GET', path: '/v1/auth/cli/session', none: 401, browser: 401, cli: 200, apiKey: 401 },
  { method: 'GET', path: '/v1/access', none: 401, browser: 401, cli: 401, apiKey: 200 },
  { method: 'GET', path: '/v1/ingest/jobs', none: 401, browser: 401, cli: 200, apiKey: 200 },
  { method: 'GET', path: `/v1/ingest/jobs/${someId}`, none: 401, browser: 401, cli: 404, apiKey: 404 },
  { method: 'DELETE', path: `/v1/sources/${someId}`, none: 401, browser: 401, cli: 404, apiKey: 404 },
  // The console's account-scoped mounts of ingest and memory: the browser session only.
  { method: 'GET', path: '/v1/account/ingest/jobs', none: 401, browser: 200, cli: 401, apiKey: 401 },
  { method: 'GET', path: `/v1/account/ingest/jobs/${someId}`, none: 401, browser: 404, cli: 401, apiKey: 401 },
  { method: 'POST', path: '/v1/account/ingest/url', body: { url: 'http://127.0.0.1/private' }, none: 401, browser: 400, cli: 401, apiKey: 401 },
  { method: 'DELETE', path: `/v1/account/sources/${someId}`, none: 401, browser: 404, cli: 401, apiKey: 401 },
  { method: 'POST', path: '/v1/account/memory/workspaces/default/peers/list', none: 401, browser: 200, cli: 401, apiKey: 401 },
  { method: 'POST', path: '/v1/account/memory/workspaces/default/claims/list', body: { state: 'pending_review' }, none: 401, browser: 200, cli: 401, apiKey: 401 },
  { method: 'GET', path: `/v1/account/memory/workspaces/default/claims/${someId}`, none: 401, browser: 404, cli: 401, apiKey: 401 },
];

describe('credential matrix', () => {
  for (const row of MATRIX) {
    it(`${row.method} ${row.path}: none ${row.none}, browser ${row.browser}, CLI ${row.cli}, API key ${row.apiKey}`, async () => {
      const before = await sql.count('select 1 from api_key where account_id = $1', [alice.id]);
      const got: Record<string, number> = {};
      for (const kind of ['none', 'browser', 'cli', 'apiKey'] as const) {
        const res = await client.call(row.method, row.path, {
          ...(kind === 'none' ? {} : { as: creds[kind] }),
          ...(row.body ? { body: row.body } : {}),
        });
        got[kind] = res.status;
        if (res.status === 401) expectError(res, 401, 'unauthorized');
      }
      expect(got).toEqual({ none: row.none, browser: row.browser, cli: row.cli, apiKey: row.apiKey });
      // Only accepted credentials changed anything (the key-creating row adds one key per accepted credential).
      const created = row.method === 'POST' && row.path === '/v1/account/api-keys' ? 2 : 0;
      expect(await sql.count('select 1 from api_key where account_id = $1', [alice.id])).toBe(before + created);
      expect((await sql.query('select state from account where id = $1', [alice.id]))[0].state).toBe('active');
    });
  }

  it('with an Authorization header the cookie is ignored: cookie + API key is refused on account routes', async () => {
    const headers = { authorization: `Bearer ${(creds.apiKey as { bearer: string }).bearer}` };
    expectError(await client.get('/v1/account/api-keys', { as: creds.browser, headers }), 401, 'unauthorized');
    // ... and cookie + CLI token is the CLI token.
    const cliHeaders = { authorization: `Bearer ${(creds.cli as { bearer: string }).bearer}` };
    expect((await client.get('/v1/auth/cli/session', { as: creds.browser, headers: cliHeaders })).status).toBe(200);
  });

  it('a browser session token is not a bearer credential', async () => {
    const token = (creds.browser as { cookie: string }).cookie;
    expectError(await client.get('/v1/account/api-keys', { as: { bearer: token } }), 401, 'unauthorized');
    expectError(await client.get('/v1/access', { as: { bearer: token } }), 401, 'unauthorized');
  });

  it('missing, malformed and unknown credentials are 401 unauthorized', async () => {
    const headers = [
      'Basic YWxpY2U6cGFzc3dvcmQ=',
      'Bearer',
      'Bearer ',
      'Bearer two words',
      `Bearer ${'a'.repeat(513)}`,
      `Bearer cairn_sk_${'A'.repeat(43)}`,
      `Bearer cairn_cli_${'A'.repeat(43)}`,
      `Bearer ${'A'.repeat(43)}`,
    ];
    for (const authorization of headers) {
      for (const path of ['/v1/access', '/v1/ingest/jobs', '/v1/account/api-keys']) {
        const res = await client.get(path, { headers: { authorization } });
        expect(res.status, `${authorization.slice(0, 30)} on ${path}`).toBe(401);
        expectError(res, 401, 'unauthorized');
      }
    }
  });
});

describe('API key scopes', () => {
  it('a key without scope ingest gets 403 forbidden on job reads; with ingest 200', async () => {
    const none = await createKey(client, creds.browser, { name: 'zero scopes', scopes: [] });
    const queryOnly = await createKey(client, creds.browser, { name: 'query only', scopes: ['query'] });
    const memory = await createKey(client, creds.browser, { name: 'memory', scopes: ['memory.read', 'memory.write'] });
    const ingest = await createKey(client, creds.browser, { name: 'ingest only', scopes: ['ingest'] });
    for (const k of [none, queryOnly, memory]) {
      expectError(await client.get('/v1/ingest/jobs', { as: { bearer: k.secret } }), 403, 'forbidden');
      expectError(await client.get(`/v1/ingest/jobs/${someId}`, { as: { bearer: k.secret } }), 403, 'forbidden');
    }
    expect((await client.get('/v1/ingest/jobs', { as: { bearer: ingest.secret } })).status).toBe(200);
  });

  it('GET /v1/access needs no scope and reports the key own scopes', async () => {
    const none = await createKey(client, creds.browser, { name: 'zero scopes', scopes: [] });
    const res = await client.get('/v1/access', { as: { bearer: none.secret } });
    expect(res.status).toBe(200);
    expect(res.body.key).toMatchObject({ id: none.id, scopes: [] });
  });
});

describe('account state ends every credential', () => {
  it('a disabled account: API keys and CLI tokens 401, browser session signed out', async () => {
    const bob = await createTestAccount(db.orm);
    const cookie = await signIn(client, bob);
    const cli = await cliSignIn(client, cookie);
    const key = await createKey(client, { cookie }, { scopes: ['ingest'] });
    expect((await client.get('/v1/access', { as: { bearer: key.secret } })).status).toBe(200);

    await disableAccount(db.orm.em.fork(), bob.email);

    expectError(await client.get('/v1/access', { as: { bearer: key.secret } }), 401, 'unauthorized');
    expectError(await client.get('/v1/ingest/jobs', { as: { bearer: key.secret } }), 401, 'unauthorized');
    expectError(await client.get('/v1/auth/cli/session', { as: { bearer: cli } }), 401, 'unauthorized');
    expectError(await client.get('/v1/account/api-keys', { as: { bearer: cli } }), 401, 'unauthorized');
    expectError(await client.get('/v1/account/api-keys', { as: { cookie } }), 401, 'unauthorized');
    expect((await client.get('/v1/auth/session', { as: { cookie } })).body.accountState).toBe('signed_out');
    expectError(await client.post('/v1/auth/login', { body: { email: bob.email, password: bob.password } }), 401, 'unauthorized');
    // Disabling revokes nothing by itself: the credentials are refused because the account is disabled.
    expect(await sql.count('select 1 from api_key where id = $1 and revoked_at is null', [key.id])).toBe(1);
    // Other accounts are unaffected.
    expect((await client.get('/v1/access', { as: creds.apiKey })).status).toBe(200);
  });

  it('a deletion_pending account: API keys and CLI tokens 401, the browser session recovery-only (403)', async () => {
    const carol = await createTestAccount(db.orm);
    const cookie = await signIn(client, carol);
    const cli = await cliSignIn(client, cookie);
    const key = await createKey(client, { cookie }, { scopes: ['ingest'] });
    await sql.query(`update account set state = 'deletion_pending' where id = $1`, [carol.id]);

    expectError(await client.get('/v1/access', { as: { bearer: key.secret } }), 401, 'unauthorized');
    expectError(await client.get('/v1/ingest/jobs', { as: { bearer: key.secret } }), 401, 'unauthorized');
    expectError(await client.get('/v1/auth/cli/session', { as: { bearer: cli } }), 401, 'unauthorized');
    expectError(await client.get('/v1/account/overview', { as: { bearer: cli } }), 401, 'unauthorized');
    for (const [method, path, body] of [
      ['GET', '/v1/account/api-keys', undefined],
      ['GET', '/v1/account/overview', undefined],
      ['GET', '/v1/account/usage', undefined],
      ['POST', '/v1/account/api-keys', { name: 'while pending' }],
      ['POST', '/v1/auth/cli/device/approve', { userCode: 'ZZZZ-ZZZZ' }],
    ] as const) {
      expectError(await client.call(method, path, { as: { cookie }, ...(body ? { body } : {}) }), 403, 'account_deletion_pending');
    }
    expect(await sql.count('select 1 from api_key where account_id = $1', [carol.id])).toBe(1);
    expect((await client.get('/v1/auth/session', { as: { cookie } })).body.accountState).toBe('deletion_pending');
  });
});
