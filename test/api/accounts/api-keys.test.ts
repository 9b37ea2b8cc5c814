import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  badCsrfVariants,
  cliSignIn,
  createKey,
  createTestAccount,
  eventually,
  expectError,
  sha256,
  signIn,
  sqlClient,
  type Credential,
  type Json,
  type Sql,
  type TestAccount,
} from '../../helpers/accounts.ts';

// API key lifecycle (spec 2.1 API keys, 4.2): create, list, revoke, rotate; secrets once, digests only.

let db: TestDatabase;
let sql: Sql;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
let alice: TestAccount;
let browser: Credential;
let cli: Credential;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
  alice = await createTestAccount(db.orm);
  browser = { cookie: await signIn(client, alice) };
  cli = { bearer: await cliSignIn(client, browser.cookie) };
});
afterAll(async () => {
  await api?.close();
  await sql?.close();
  await temporal.close();
  await db?.drop();
});

const RECORD_KEYS = ['audiences', 'createdAt', 'id', 'lastUsedAt', 'maxPreset', 'name', 'prefix', 'replacedBy', 'revokedAt', 'scopes', 'status'];
const list = async (as: Credential = browser) => {
  const res = await client.get('/v1/account/api-keys', { as });
  expect(res.status).toBe(200);
  return res;
};
const access = (secret: string) => client.get('/v1/access', { as: { bearer: secret } });
const keyRow = async (id: string) => (await sql.query('select * from api_key where id = $1', [id]))[0];

describe('create (POST /v1/account/api-keys)', () => {
  it('answers 201 with the key record and the secret, once; stores only its SHA-256 digest', async () => {
    const res = await client.post('/v1/account/api-keys', { as: browser, body: { name: 'first key' } });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['apiKey', 'schemaVersion', 'secret']);
    expect(Object.keys(res.body.apiKey).sort()).toEqual(RECORD_KEYS);
    const { apiKey, secret } = res.body;
    expect(res.body.schemaVersion).toBe('service-api-key-v1');
    expect(secret).toMatch(/^cairn_sk_[A-Za-z0-9_-]{40,}$/);
    expect(apiKey).toEqual({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      name: 'first key',
      prefix: secret.slice(0, 'cairn_sk_'.length + 6),
      // Default key setup: ingest and query (spec 5).
      scopes: ['ingest', 'query'],
      maxPreset: 'accuracy',
      audiences: null,
      status: 'active',
      createdAt: expect.any(String),
      lastUsedAt: null,
      revokedAt: null,
      replacedBy: null,
    });
    expect(secret.startsWith(apiKey.prefix)).toBe(true);
    expect(secret.length).toBeGreaterThan(apiKey.prefix.length + 20);

    const row = await keyRow(apiKey.id);
    expect(row.account_id).toBe(alice.id);
    expect(row.secret_hash).toBe(sha256(secret));
    const [{ text }] = await sql.query('select row_to_json(k)::text as text from api_key k where id = $1', [apiKey.id]);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(secret.slice('cairn_sk_'.length));

    // The key works.
    expect((await access(secret)).status).toBe(200);
  });

  it('takes scopes (zero or more) and a preset ceiling', async () => {
    const full = await createKey(client, browser, {
      name: 'everything',
      scopes: ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'],
      maxPreset: 'efficient',
    });
    expect(full.record).toMatchObject({
      scopes: ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'],
      maxPreset: 'efficient',
    });
    expect(await keyRow(full.id)).toMatchObject({
      scopes: ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'],
      max_preset: 'efficient',
    });
    const limited = await createKey(client, browser, { name: 'team', scopes: ['query'], audiences: ['team-a', 'ops.eu'] });
    expect(limited.record.audiences).toEqual(['team-a', 'ops.eu']);
    expect((await keyRow(limited.id)).audiences).toEqual(['team-a', 'ops.eu']);
    for (const audiences of [[], ['team-a', 'team-a'], ['has space'], ['x'.repeat(65)]]) {
      const bad = await client.post('/v1/account/api-keys', { as: browser, body: { name: 'bad', audiences } });
      expect(bad.status, JSON.stringify(audiences)).toBe(400);
    }
    const none = await createKey(client, browser, { name: 'no scopes', scopes: [] });
    expect(none.record.scopes).toEqual([]);
    expect((await keyRow(none.id)).scopes).toEqual([]);
  });

  it('rejects invalid requests with 400 validation_error and creates nothing', async () => {
    const before = await sql.count('select 1 from api_key where account_id = $1', [alice.id]);
    const bodies: Json[] = [
      {},
      { name: '' },
      { name: '   ' },
      { name: 'n'.repeat(101) },
      { name: 'k', scopes: ['admin'] },
      { name: 'k', scopes: ['query', 'query'] },
      { name: 'k', scopes: ['query.answer'] },
      { name: 'k', scopes: ['ingest', 'query.answer'] },
      { name: 'k', maxPreset: 'fast' },
      { name: 'k', secret: 'cairn_sk_mine' },
      { name: 'k', scopes: 'query' },
    ];
    for (const body of bodies) {
      const res = await client.post('/v1/account/api-keys', { as: browser, body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expectError(res, 400, 'validation_error');
    }
    expect(await sql.count('select 1 from api_key where account_id = $1', [alice.id])).toBe(before);
    // The boundaries that are allowed.
    expect((await createKey(client, browser, { name: 'n'.repeat(100) })).record.name).toBe('n'.repeat(100));
    expect((await createKey(client, browser, { scopes: ['query', 'query.answer'] })).record.scopes).toEqual(['query', 'query.answer']);
  });

  it('a CLI token creates keys without CSRF header or Origin (and a foreign Origin does not matter)', async () => {
    const res = await client.post('/v1/account/api-keys', { as: cli, body: { name: 'from the cli' } });
    expect(res.status).toBe(201);
    expect((await keyRow(res.body.apiKey.id)).account_id).toBe(alice.id);
    const odd = await client.post('/v1/account/api-keys', {
      as: cli,
      body: { name: 'odd headers' },
      headers: { origin: 'https://evil.example', 'x-service-csrf': '0' },
    });
    expect(odd.status).toBe(201);
  });

  it('a browser session needs the CSRF header and an allowed Origin: 403 and no key', async () => {
    const before = await sql.count('select 1 from api_key where account_id = $1', [alice.id]);
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await client.post('/v1/account/api-keys', {
        as: browser,
        body: { name: 'csrf' },
        csrf: false,
        headers: variant.headers,
      });
      expect(res.status, variant.label).toBe(403);
      expectError(res, 403, 'forbidden');
    }
    expect(await sql.count('select 1 from api_key where account_id = $1', [alice.id])).toBe(before);
  });
});

describe('list (GET /v1/account/api-keys)', () => {
  it('lists the account keys newest first, never with a secret', async () => {
    const made = [
      await createKey(client, browser, { name: 'list one' }),
      await createKey(client, cli, { name: 'list two' }),
    ];
    for (const as of [browser, cli]) {
      const res = await list(as);
      expect(Object.keys(res.body).sort()).toEqual(['apiKeys', 'schemaVersion']);
      expect(res.body.schemaVersion).toBe('service-api-key-list-v1');
      const raw = JSON.stringify(res.body);
      for (const k of made) {
        expect(raw).not.toContain(k.secret);
        expect(res.body.apiKeys).toContainEqual(k.record);
      }
      for (const record of res.body.apiKeys) {
        expect(Object.keys(record).sort()).toEqual(RECORD_KEYS);
        expect(record.prefix.length).toBe('cairn_sk_'.length + 6);
      }
      const created = res.body.apiKeys.map((r: Json) => Date.parse(r.createdAt));
      expect(created).toEqual([...created].sort((a, b) => b - a));
      expect(res.body.apiKeys.length).toBe(await sql.count('select 1 from api_key where account_id = $1', [alice.id]));
    }
  });

  it('records last use after the key authenticates a request', async () => {
    const k = await createKey(client, browser, { name: 'last used' });
    expect(k.record.lastUsedAt).toBeNull();
    expect((await access(k.secret)).status).toBe(200);
    const used = await eventually(async () => (await keyRow(k.id)).last_used_at as Date | null, 'api_key.last_used_at');
    expect(Math.abs(used.getTime() - Date.now())).toBeLessThan(60_000);
    const listed = (await list()).body.apiKeys.find((r: Json) => r.id === k.id);
    expect(listed.lastUsedAt).toBe(used.toISOString());
  });
});

describe('revoke (DELETE /v1/account/api-keys/:id)', () => {
  it('answers 200 with the revoked record; the key then fails with 401', async () => {
    const k = await createKey(client, browser, { name: 'to revoke' });
    expect((await access(k.secret)).status).toBe(200);
    const res = await client.delete(`/v1/account/api-keys/${k.id}`, { as: browser });
    expect(res.status).toBe(200);
    expect(Object.keys(res.body).sort()).toEqual(['apiKey', 'schemaVersion']);
    // lastUsedAt may already carry the use above (recorded after the response).
    expect(res.body.apiKey).toEqual({
      ...k.record,
      status: 'revoked',
      revokedAt: expect.any(String),
      lastUsedAt: res.body.apiKey.lastUsedAt,
    });
    expect(JSON.stringify(res.body)).not.toContain(k.secret);
    expect((await keyRow(k.id)).revoked_at).toBeInstanceOf(Date);

    expectError(await access(k.secret), 401, 'unauthorized');
    expectError(await client.get('/v1/ingest/jobs', { as: { bearer: k.secret } }), 401, 'unauthorized');
    expect((await list()).body.apiKeys.find((r: Json) => r.id === k.id).status).toBe('revoked');

    // Revoking again changes nothing.
    const again = await client.delete(`/v1/account/api-keys/${k.id}`, { as: browser });
    expect(again.status).toBe(200);
    expect(again.body.apiKey.revokedAt).toBe(res.body.apiKey.revokedAt);
  });

  it('works with a CLI token (no CSRF) and needs CSRF with a browser session', async () => {
    const k = await createKey(client, browser, { name: 'csrf revoke' });
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await client.delete(`/v1/account/api-keys/${k.id}`, { as: browser, csrf: false, headers: variant.headers });
      expect(res.status, variant.label).toBe(403);
    }
    expect((await keyRow(k.id)).revoked_at).toBeNull();
    expect((await access(k.secret)).status).toBe(200);
    expect((await client.delete(`/v1/account/api-keys/${k.id}`, { as: cli })).status).toBe(200);
    expectError(await access(k.secret), 401, 'unauthorized');
  });

  it('an unknown id is 404 and a malformed id 400', async () => {
    expectError(await client.delete(`/v1/account/api-keys/${randomUUID()}`, { as: browser }), 404, 'not_found');
    expectError(await client.delete('/v1/account/api-keys/not-a-uuid', { as: browser }), 400, 'validation_error');
  });
});

describe('rotate (POST /v1/account/api-keys/:id/rotate)', () => {
  it('issues a replacement with the same scopes and ceiling; the old key fails with 401 at once', async () => {
    const old = await createKey(client, browser, { name: 'rotating', scopes: ['ingest', 'memory.read'], maxPreset: 'efficient' });
    const res = await client.post(`/v1/account/api-keys/${old.id}/rotate`, { as: browser, body: {} });
    expect(res.status).toBe(201);
    expect(Object.keys(res.body).sort()).toEqual(['apiKey', 'schemaVersion', 'secret']);
    const { apiKey, secret } = res.body;
    expect(secret).toMatch(/^cairn_sk_/);
    expect(secret).not.toBe(old.secret);
    expect(apiKey).toMatchObject({
      name: 'rotating',
      scopes: ['ingest', 'memory.read'],
      maxPreset: 'efficient',
      status: 'active',
      revokedAt: null,
      replacedBy: null,
    });
    expect(apiKey.id).not.toBe(old.id);
    expect((await keyRow(apiKey.id)).secret_hash).toBe(sha256(secret));

    expectError(await access(old.secret), 401, 'unauthorized');
    const now = await access(secret);
    expect(now.status).toBe(200);
    expect(now.body.key).toMatchObject({ id: apiKey.id, scopes: ['ingest', 'memory.read'], maxPreset: 'efficient' });

    const oldRecord = (await list()).body.apiKeys.find((r: Json) => r.id === old.id);
    expect(oldRecord).toMatchObject({ status: 'revoked', replacedBy: apiKey.id, revokedAt: expect.any(String) });
    expect(JSON.stringify((await list()).body)).not.toContain(secret);
  });

  it('takes an optional new name; a rotated-out or unknown key is 404; unknown fields 400', async () => {
    const old = await createKey(client, cli, { name: 'before' });
    const renamed = await client.post(`/v1/account/api-keys/${old.id}/rotate`, { as: cli, body: { name: 'after' } });
    expect(renamed.status).toBe(201);
    expect(renamed.body.apiKey.name).toBe('after');

    const before = await sql.count('select 1 from api_key where account_id = $1', [alice.id]);
    expectError(await client.post(`/v1/account/api-keys/${old.id}/rotate`, { as: cli, body: {} }), 404, 'not_found');
    expectError(await client.post(`/v1/account/api-keys/${randomUUID()}/rotate`, { as: cli, body: {} }), 404, 'not_found');
    expectError(
      await client.post(`/v1/account/api-keys/${renamed.body.apiKey.id}/rotate`, { as: cli, body: { scopes: ['memory.write'] } }),
      400,
      'validation_error',
    );
    expect(await sql.count('select 1 from api_key where account_id = $1', [alice.id])).toBe(before);
    // The replacement is still the live key.
    expect((await access(renamed.body.secret)).status).toBe(200);
  });

  it('two simultaneous rotations of one key: one replacement, the other 404', async () => {
    const k = await createKey(client, cli, { name: 'race' });
    const before = await sql.count('select 1 from api_key where account_id = $1', [alice.id]);
    const results = await Promise.all([
      client.post(`/v1/account/api-keys/${k.id}/rotate`, { as: cli, body: {} }),
      client.post(`/v1/account/api-keys/${k.id}/rotate`, { as: cli, body: {} }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 404]);
    expect(await sql.count('select 1 from api_key where account_id = $1', [alice.id])).toBe(before + 1);
    const winner = results.find((r) => r.status === 201)!;
    expect((await keyRow(k.id)).rotated_to).toBe(winner.body.apiKey.id);
    expect((await access(winner.body.secret)).status).toBe(200);
  });

  it('a browser session needs CSRF to rotate: 403 and the key keeps working', async () => {
    const k = await createKey(client, browser, { name: 'csrf rotate' });
    const before = await sql.count('select 1 from api_key where account_id = $1', [alice.id]);
    for (const variant of badCsrfVariants(api.baseUrl)) {
      const res = await client.post(`/v1/account/api-keys/${k.id}/rotate`, { as: browser, body: {}, csrf: false, headers: variant.headers });
      expect(res.status, variant.label).toBe(403);
    }
    expect(await sql.count('select 1 from api_key where account_id = $1', [alice.id])).toBe(before);
    expect((await access(k.secret)).status).toBe(200);
  });
});

describe('keys belong to one account', () => {
  it("another account neither lists, revokes nor rotates them (404, key unaffected)", async () => {
    const k = await createKey(client, browser, { name: 'alice only' });
    const bob = await createTestAccount(db.orm);
    const bobBrowser = { cookie: await signIn(client, bob) };
    const bobCli = { bearer: await cliSignIn(client, bobBrowser.cookie) };
    const bobKey = await createKey(client, bobBrowser, { name: 'bob key' });

    for (const as of [bobBrowser, bobCli]) {
      const listed = (await list(as)).body.apiKeys;
      expect(listed.map((r: Json) => r.id)).toEqual([bobKey.id]);
      expectError(await client.delete(`/v1/account/api-keys/${k.id}`, { as }), 404, 'not_found');
      expectError(await client.post(`/v1/account/api-keys/${k.id}/rotate`, { as, body: {} }), 404, 'not_found');
    }
    expect(await keyRow(k.id)).toMatchObject({ revoked_at: null, rotated_to: null, account_id: alice.id });
    expect((await access(k.secret)).status).toBe(200);
    expect(await sql.count('select 1 from api_key where account_id = $1', [bob.id])).toBe(1);
    expect((await list()).body.apiKeys.map((r: Json) => r.id)).not.toContain(bobKey.id);
  });
});
