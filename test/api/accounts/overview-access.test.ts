import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../../helpers/db.ts';
import { startApi, testTemporalClient } from '../../helpers/services.ts';
import {
  ApiClient,
  cliSignIn,
  createKey,
  createTestAccount,
  expectError,
  signIn,
  type Credential,
  type TestAccount,
} from '../../helpers/accounts.ts';

// GET /v1/account/overview (spec 2.1 AccountOverview, 4.2, 8 limits) and GET /v1/access (4.3).

let db: TestDatabase;
let api: Awaited<ReturnType<typeof startApi>>;
let client: ApiClient;
let alice: TestAccount;
let browser: Credential;
let cli: Credential;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal });
  client = new ApiClient(api.baseUrl);
  alice = await createTestAccount(db.orm, {
    displayName: 'Alice A.',
    monthlyCredits: 40,
    onboardingCredits: 2,
    queryDailyLimit: 11,
    queryMonthlyLimit: 111,
    ingestDailyLimit: 7,
    ingestMonthlyLimit: 77,
  });
  browser = { cookie: await signIn(client, alice) };
  cli = { bearer: await cliSignIn(client, browser.cookie) };
});
afterAll(async () => {
  await api?.close();
  await temporal.close();
  await db?.drop();
});

describe('GET /v1/account/overview', () => {
  it('answers AccountOverview for the signed-in account (browser session and CLI token alike)', async () => {
    for (const as of [browser, cli]) {
      const res = await client.get('/v1/account/overview', { as });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        schemaVersion: 'service-account-overview-v2',
        account: { email: alice.email, displayName: 'Alice A.' },
        // monthly 40 + onboarding 2, nothing spent yet.
        credits: { totalCreditsRemaining: 42 },
        recordCounts: { total: 0 },
        sources: [],
        ingestJobs: [],
      });
    }
  });

  it('shows another account its own figures', async () => {
    const bob = await createTestAccount(db.orm, { monthlyCredits: 5, onboardingCredits: 0, displayName: null });
    const res = await client.get('/v1/account/overview', { as: { cookie: await signIn(client, bob) } });
    expect(res.status).toBe(200);
    expect(res.body.account).toEqual({ email: bob.email, displayName: null });
    expect(res.body.credits).toEqual({ totalCreditsRemaining: 5 });
  });

  it('accepts sourceLimit and ingestJobLimit of 1 and 100', async () => {
    for (const q of ['sourceLimit=1', 'sourceLimit=100', 'ingestJobLimit=1', 'ingestJobLimit=100', 'sourceLimit=1&ingestJobLimit=100']) {
      const res = await client.get(`/v1/account/overview?${q}`, { as: browser });
      expect(res.status, q).toBe(200);
      expect(res.body.schemaVersion).toBe('service-account-overview-v2');
    }
  });

  it('rejects limits 0, 101, 2.5 and abc, and unknown parameters, with 400 validation_error', async () => {
    for (const name of ['sourceLimit', 'ingestJobLimit']) {
      for (const value of ['0', '101', '2.5', 'abc', '-1', '']) {
        const res = await client.get(`/v1/account/overview?${name}=${value}`, { as: browser });
        expect(res.status, `${name}=${value}`).toBe(400);
        expectError(res, 400, 'validation_error');
      }
    }
    expectError(await client.get('/v1/account/overview?limit=5', { as: browser }), 400, 'validation_error');
  });
});

describe('GET /v1/access', () => {
  it("reports the calling key's scopes, ceiling, context boundary, quotas and credits", async () => {
    const key = await createKey(client, browser, { name: 'access key', scopes: ['ingest', 'memory.read'], maxPreset: 'efficient' });
    const res = await client.get('/v1/access', { as: { bearer: key.secret } });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      schemaVersion: 'service-access-v1',
      key: { id: key.id, name: 'access key', prefix: key.record.prefix, scopes: ['ingest', 'memory.read'], maxPreset: 'efficient' },
      account: { email: alice.email },
      contextBoundary: { workspaces: ['default'], audiences: null },
      quotas: { query: { dailyLimit: 11, monthlyLimit: 111 }, ingest: { dailyLimit: 7, monthlyLimit: 77 } },
      credits: { totalRemaining: 42, monthlyRemaining: 40, onboardingRemaining: 2 },
      processingBudgets: { ocr: { creditsPerPage: 1, pagesPerRequest: 20, pagesPerDay: 200, pagesUsedToday: 0 } },
    });
    expect(JSON.stringify(res.body)).not.toContain(key.secret);
  });

  it('each key sees itself: a second key of the same account reports its own id and scopes', async () => {
    const a = await createKey(client, cli, { name: 'a', scopes: ['query'] });
    const b = await createKey(client, cli, { name: 'b', scopes: ['ingest', 'query', 'query.answer'] });
    const ra = await client.get('/v1/access', { as: { bearer: a.secret } });
    const rb = await client.get('/v1/access', { as: { bearer: b.secret } });
    expect(ra.body.key).toMatchObject({ id: a.id, name: 'a', scopes: ['query'], maxPreset: 'accuracy' });
    expect(rb.body.key).toMatchObject({ id: b.id, name: 'b', scopes: ['ingest', 'query', 'query.answer'] });
  });

  it('refuses the browser session and the CLI token with 401', async () => {
    expectError(await client.get('/v1/access', { as: browser }), 401, 'unauthorized');
    expectError(await client.get('/v1/access', { as: cli }), 401, 'unauthorized');
    expectError(await client.get('/v1/access'), 401, 'unauthorized');
  });
});
