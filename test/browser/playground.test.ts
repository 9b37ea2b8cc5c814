import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ApiClient, cliSignIn, createKey, createTestAccount, signIn, type TestAccount } from '../helpers/accounts.ts';
import { launchChromium, openConsole, screenshot, signInThroughConsole, type ConsolePage } from '../helpers/browser.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startFixtureServer } from '../helpers/fixture-server.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The answers playground (POST /v1/account/answers/query with the browser session) in Chromium: a
// source is ingested through the public API, then a cited answer is asked for in the console and its
// citations must sit next to the evidence they cite.

let db: TestDatabase;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let browser: Browser;
let tab: ConsolePage;
let dana: TestAccount;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();

const GUIDE = `# Cairn building guide

Trail cairns in the Kestrel Range are built from flat granite stones.
Each cairn on the Kestrel ridge stands about one metre tall so it stays visible above snow.
Walkers should never dismantle a cairn, because it marks the safe route through fog.
`;

beforeAll(async () => {
  db = await createTestDatabase();
  fixtures = await startFixtureServer({ '/guide.md': { type: 'text/markdown', body: GUIDE } });
  api = await startApi({ orm: db.orm, temporal, taskQueue, env: { INGEST_URL_ALLOWLIST: fixtures.origin } });
  worker = await startWorker({ orm: db.orm, taskQueue, urlAllowlist: [fixtures.origin] });
  dana = await createTestAccount(db.orm);
  browser = await launchChromium();
  tab = await openConsole(browser, api.baseUrl);
});

afterAll(async () => {
  await tab?.context.close();
  await browser?.close();
  await worker?.stop();
  await api?.close();
  await fixtures?.close();
  await temporal.close();
  await db?.drop();
});

it('runs a cited answer in the playground and shows each citation beside its evidence', async () => {
  const client = new ApiClient(api.baseUrl);
  const token = await cliSignIn(client, await signIn(client, dana));
  const key = await createKey(client, { bearer: token }, { scopes: ['ingest'] });
  const queued = await client.post('/v1/ingest/url', {
    as: { bearer: key.secret },
    body: { url: `${fixtures.origin}/guide.md`, dryRun: false, datedAt: '2026-11-20', idempotencyKey: 'playground-guide-1' },
  });
  expect(queued.status, JSON.stringify(queued.body)).toBe(202);
  const deadline = Date.now() + 60_000;
  for (;;) {
    const job = await client.get(`/v1/ingest/jobs/${queued.body.job.id}`, { as: { bearer: key.secret } });
    if (job.body.job.status === 'succeeded') break;
    expect(job.body.job.status).not.toBe('failed');
    if (Date.now() > deadline) throw new Error('the ingest job did not finish');
    await new Promise((r) => setTimeout(r, 250));
  }

  const { page } = tab;
  await signInThroughConsole(page, dana, '/playground');
  await page.getByRole('heading', { name: 'Answers playground', level: 1 }).waitFor();
  await page.getByLabel('Question').fill('How tall is each cairn on the Kestrel ridge?');
  await page.getByLabel('Mode').selectOption('answer');
  await page.getByRole('button', { name: 'Run' }).click();

  const answer = page.getByRole('region', { name: /^Answer/ });
  await answer.waitFor({ timeout: 30_000 });
  expect(await answer.innerText()).toMatch(/partial/);
  expect(await answer.innerText()).toMatch(/one metre tall/);
  const links = answer.getByRole('link', { name: /^evidence \d+$/ });
  expect(await links.count()).toBeGreaterThan(0);

  // The first cited evidence item holds the cited sentence, and its citation (handle and label) sits beside it.
  const href = (await links.first().getAttribute('href'))!;
  const row = page.locator(href.replace(/^#/, '#'));
  expect(await row.locator('.evidence-body').innerText()).toMatch(/one metre tall/);
  const beside = row.getByRole('complementary');
  expect(await beside.innerText()).toContain(href.slice('#ev-'.length));
  expect(await beside.innerText()).toMatch(/Cairn building guide/);
  await links.first().click();
  expect(new URL(page.url()).hash).toBe(href);

  // Credits the run spent are shown from the response headers.
  expect(await page.getByRole('term').filter({ hasText: 'Credits used' }).count()).toBe(1);
  await screenshot(page, 'playground');
  expect(tab.problems).toEqual([]);
  expect(tab.foreign).toEqual([]);
});
