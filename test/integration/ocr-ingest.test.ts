import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { activityRuns } from '../helpers/faults.ts';
import { proseLines, scannedPdf } from '../helpers/scanned-pdf.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Provider-backed previews and live OCR (spec 4.3 rules 5 and 6), end to end over HTTP with a real
// worker, on scanned PDFs made in setup. OCR costs 1 credit a page (OCR_CREDITS_PER_PAGE default).

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let twoScans: Buffer;
let threeScans: Buffer;
let textPdf: Buffer;
const today = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  twoScans = await scannedPdf([1, 2].map(proseLines));
  threeScans = await scannedPdf([3, 4, 5].map(proseLines));
  textPdf = await scannedPdf([6].map(proseLines), { textPages: [1] });
}, 120_000);
afterAll(async () => {
  await worker?.shutdown();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

async function newAccount(credits: { monthlyCredits: number; onboardingCredits: number; ingestDailyLimit?: number } = { monthlyCredits: 1000, onboardingCredits: 0 }) {
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, {
    email: `o-${randomUUID()}@example.test`, password: 'a-long-enough-password', ...credits,
  });
  const { secret } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest', 'query'], maxPreset: 'accuracy' });
  return { id: a.id, key: secret };
}

async function call(baseUrl: string, key: string, method: string, path: string, body?: unknown) {
  const res = await fetch(`${baseUrl}${path}`, {
    method, headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as Json };
}

const upload = (bytes: Buffer, live?: string) => ({
  filename: 'scan.pdf', contentType: 'application/pdf', contentBase64: bytes.toString('base64'),
  ...(live ? { dryRun: false, datedAt: today, idempotencyKey: live } : {}),
});

const sql = async <T = Json>(text: string, params: unknown[]) => db.orm.em.fork().getConnection().execute<T[]>(text, params);
const charged = async (accountId: string) =>
  Number((await sql<{ n: string }>(`select coalesce(sum(amount), 0) as n from credit_ledger where account_id = ? and kind = 'charge'`, [accountId]))[0]!.n);
const ingestUnits = async (accountId: string) =>
  Number((await sql<{ n: number }>(`select coalesce(max(used), 0) as n from quota_usage where account_id = ? and metric = 'ingest' and period = 'day'`, [accountId]))[0]!.n);
const reservations = async (accountId: string) =>
  Number((await sql<{ n: string }>('select count(*) as n from credit_reservation where account_id = ?', [accountId]))[0]!.n);

async function waitJob(key: string, id: string): Promise<Json> {
  for (let i = 0; i < 480; i++) {
    const r = await call(api.baseUrl, key, 'GET', `/v1/ingest/jobs/${id}`);
    if (r.body.job.status !== 'queued') return r.body.job;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`job ${id} did not finish`);
}

describe('provider-backed previews', () => {
  it('spend one ingest unit, reserve and charge the pages, return credit headers and a plan naming the OCR pages; a text preview stays free', { timeout: 120_000 }, async () => {
    const a = await newAccount();
    const free = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(textPdf));
    expect(free.status).toBe(200);
    expect(free.body.plan.estimatedCredits).toBe(0);
    expect(free.headers.get('x-service-credit-cost')).toBeNull();
    expect(await ingestUnits(a.id)).toBe(0);
    expect(await reservations(a.id)).toBe(0);

    const paid = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans));
    expect(paid.status).toBe(200);
    expect(paid.body.plan).toMatchObject({ estimatedCredits: 2, pages: 2, structureOnly: false, warnings: ['Text of pages 1, 2 was recognised by OCR (scanned pages).'] });
    expect(paid.body.plan.records.facts).toBeGreaterThan(0);
    expect(paid.body.plan.recognisedText.map((p: Json) => p.page)).toEqual([1, 2]);
    expect(paid.body.plan.recognisedText[1].text).toContain('Ada Lovelace2 counted 102 migrating terns');
    expect(paid.headers.get('x-service-credit-cost')).toBe('2');
    expect(paid.headers.get('x-service-credit-remaining')).toBe('998');
    expect(paid.headers.get('x-service-quota-metric')).toBe('ingest');
    expect(await ingestUnits(a.id)).toBe(1);
    expect(await charged(a.id)).toBe(2);

    // The same bytes again: the kept text is used, no provider call, nothing spent.
    const again = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans));
    expect(again.status).toBe(200);
    expect(again.body.plan).toEqual(expect.objectContaining({ records: paid.body.plan.records, estimatedCredits: 0, recognisedText: paid.body.plan.recognisedText }));
    expect(await charged(a.id)).toBe(2);
    expect(await ingestUnits(a.id)).toBe(1);

    // Queueing the previewed bytes reuses the OCR: no second charge, no second unit, no OCR activity.
    const queued = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans, `reuse-${randomUUID()}`));
    expect(queued.status).toBe(202);
    expect(queued.headers.get('x-service-quota-daily-remaining')).toBe(paid.headers.get('x-service-quota-daily-remaining'));
    expect(await waitJob(a.key, queued.body.job.id)).toMatchObject({ status: 'succeeded' });
    expect(await charged(a.id)).toBe(2);
    expect(await ingestUnits(a.id)).toBe(1);
    const runs = await activityRuns(temporal.client.workflow.getHandle(ingestWorkflowId(queued.body.job.id)));
    expect(runs.recogniseIngestPages).toBeUndefined();
    const rows = await sql<{ kind: string; page: number | null; text: string }>('select kind, page, text from record where source_id = ?', [queued.body.job.id]);
    expect(rows.filter((r) => r.page === null)).toEqual([]);
    expect(rows.find((r) => r.kind === 'fact' && r.text.includes('Kestrel2 '))?.page).toBe(2);
    expect(await sql('select * from ocr_page where owner_id = ?', [queued.body.job.id])).toEqual([]);

    // The preview is used up: queueing the same bytes again (a new key) pays for its own OCR.
    const second = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans, `again-${randomUUID()}`));
    expect(second.status).toBe(202);
    expect(await waitJob(a.key, second.body.job.id)).toMatchObject({ status: 'succeeded' });
    expect(await charged(a.id)).toBe(4);
  });

  it('refuse over the per-request or the daily provider budget with 402 processing_budget_exceeded before any work, as /v1/access reports them', { timeout: 120_000 }, async () => {
    const a = await newAccount();
    const access = await call(api.baseUrl, a.key, 'GET', '/v1/access');
    expect(access.body.processingBudgets).toEqual({ ocr: { creditsPerPage: 1, pagesPerRequest: 20, pagesPerDay: 200, pagesUsedToday: 0 } });

    await sql('update account set ocr_preview_max_pages = 2, ocr_preview_daily_pages = 4 where id = ?', [a.id]);
    const big = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(threeScans));
    expect(big.status).toBe(402);
    expect(big.body.error.code).toBe('processing_budget_exceeded');
    expect(big.body.error.message).toContain('per-request provider budget of 2 pages');
    expect(big.headers.get('x-service-credit-cost')).toBe('0');
    expect(await reservations(a.id)).toBe(0);
    expect(await ingestUnits(a.id)).toBe(0);

    expect((await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans))).status).toBe(200);
    await sql(`update provider_preview set status = 'used' where account_id = ?`, [a.id]); // not reusable: a fresh provider call
    expect((await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans))).status).toBe(200);
    const daily = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(await scannedPdf([[`Page one of another scan`]])));
    expect(daily.status).toBe(402);
    expect(daily.body.error).toMatchObject({ code: 'processing_budget_exceeded', message: expect.stringContaining("4 pages of today's provider budget of 4 pages are used") });
    expect(await reservations(a.id)).toBe(2);
    expect((await call(api.baseUrl, a.key, 'GET', '/v1/access')).body.processingBudgets.ocr).toMatchObject({ pagesPerRequest: 2, pagesPerDay: 4, pagesUsedToday: 4 });

    // Past its retention a preview's text is removed (by the next provider-backed preview) and no longer reused.
    const [kept] = await sql<{ id: string }>(`update provider_preview set created_at = now() - interval '2 days' where account_id = ? and status = 'ready' returning id`, [a.id]);
    expect(await sql('select page from ocr_page where owner_id = ?', [kept!.id])).toHaveLength(2);
    expect((await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(await scannedPdf([['A page read after the expiry']])))).status).toBe(200);
    expect(await sql('select status from provider_preview where id = ?', [kept!.id])).toEqual([{ status: 'expired' }]);
    expect(await sql('select page from ocr_page where owner_id = ?', [kept!.id])).toEqual([]);
  });

  it('refuse with 402 account_credits_exhausted when credits cannot cover the OCR, 429 without an ingest unit; a live job that cannot pay fails, not retryable', { timeout: 120_000 }, async () => {
    const a = await newAccount({ monthlyCredits: 1, onboardingCredits: 0 });
    const poor = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans));
    expect(poor.status).toBe(402);
    expect(poor.body.error.code).toBe('account_credits_exhausted');
    expect(await ingestUnits(a.id)).toBe(0);

    // Without an ingest allowance left: 429 before any credit is held.
    const spent = await newAccount({ monthlyCredits: 1000, onboardingCredits: 0, ingestDailyLimit: 0 });
    const noUnit = await call(api.baseUrl, spent.key, 'POST', '/v1/ingest/file', upload(twoScans));
    expect(noUnit.status).toBe(429);
    expect(noUnit.body.error.code).toBe('account_quota_exceeded');
    expect(await reservations(spent.id)).toBe(0);

    const live = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(twoScans, `poor-${randomUUID()}`));
    expect(live.status).toBe(202);
    const job = await waitJob(a.key, live.body.job.id);
    expect(job).toMatchObject({ status: 'failed', failure: { retryable: false, message: 'Not enough credits to recognise 2 scanned pages (OCR).' } });
    expect(await charged(a.id)).toBe(0);
  });
});

describe('a scanned PDF whose OCR finds no text', () => {
  it('is refused by the dry run as the live path refuses it: 400 invalid_ingest_request, nothing charged, nothing kept', { timeout: 180_000 }, async () => {
    // One page that paints a picture of a blank page: a scan, and OCR reads nothing on it.
    const blankScan = await scannedPdf([[]]);
    const a = await newAccount();
    const dry = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(blankScan));
    expect(dry.status, JSON.stringify(dry.body)).toBe(400);
    expect(dry.body.error).toMatchObject({ code: 'invalid_ingest_request', message: 'The PDF contains no extractable text.' });
    expect(dry.headers.get('x-service-credit-cost')).toBe('0');
    expect(dry.headers.get('x-service-credit-remaining')).toBe('1000');
    expect(await charged(a.id)).toBe(0);
    const [preview] = await sql<{ id: string; status: string }>('select id, status from provider_preview where account_id = ?', [a.id]);
    expect(preview).toMatchObject({ status: 'failed' });
    expect(await sql('select page from ocr_page where owner_id = ?', [preview!.id])).toEqual([]);
    expect(await sql('select status, charged from credit_reservation where id = ?', [preview!.id])).toEqual([{ status: 'settled', charged: 0 }]);

    // The live path: the job fails with the same message, not retryable.
    const live = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(blankScan, `blank-${randomUUID()}`));
    expect(live.status).toBe(202);
    const job = await waitJob(a.key, live.body.job.id);
    expect(job).toMatchObject({ status: 'failed', failure: { retryable: false, message: dry.body.error.message } });
  });
});

describe('live OCR of a scanned PDF that was not previewed', () => {
  it('runs as its own activity, charges each page once, and every record cites its page', { timeout: 120_000 }, async () => {
    const a = await newAccount();
    const live = await call(api.baseUrl, a.key, 'POST', '/v1/ingest/file', upload(threeScans, `live-${randomUUID()}`));
    expect(live.status).toBe(202);
    expect(await waitJob(a.key, live.body.job.id)).toMatchObject({ status: 'succeeded' });
    expect(await charged(a.id)).toBe(3);
    const runs = await activityRuns(temporal.client.workflow.getHandle(ingestWorkflowId(live.body.job.id)));
    expect(runs.recogniseIngestPages).toMatchObject({ completed: 1 });
    expect(runs.buildIngestRecords).toMatchObject({ completed: 2 });
    const rows = await sql<{ page: number | null }>('select page from record where source_id = ?', [live.body.job.id]);
    expect(rows.length).toBeGreaterThan(3);
    expect(new Set(rows.map((r) => r.page))).toEqual(new Set([1, 2, 3]));
  });
});
