import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { proseLines, scannedPdf } from '../helpers/scanned-pdf.ts';
import { extractionProcessesOf } from '../helpers/processes.ts';
import { startApi, testTemporalClient } from '../helpers/services.ts';

// Provider-backed previews that do not finish (spec 4.3 rule 6, section 7): billed OCR stopped by a
// limit is 502 processing_interrupted; an extraction process killed mid-OCR leaves an outcome that
// cannot be verified, 502 processing_outcome_unverified. Neither returns a plan or leaves text to reuse.

let db: TestDatabase;
const temporal = testTemporalClient();
const apis: Awaited<ReturnType<typeof startApi>>[] = [];
let scan: Buffer;
const sql = async <T>(text: string, params: unknown[]) => db.orm.em.fork().getConnection().execute<T[]>(text, params);

beforeAll(async () => {
  db = await createTestDatabase();
  scan = await scannedPdf([1, 2, 3].map(proseLines));
}, 60_000);
// One API (and extraction pool) at a time: the kill below must reach only the process doing OCR.
afterEach(async () => {
  for (const a of apis.splice(0)) await a.close();
});
afterAll(async () => {
  await temporal.close();
  await db?.drop();
});

async function setup(env: NodeJS.ProcessEnv) {
  const api = await startApi({ orm: db.orm, temporal, env: { EXTRACTION_PROCESSES: '1', ...env } });
  apis.push(api);
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, { email: `o-${randomUUID()}@example.test`, password: 'a-long-enough-password', monthlyCredits: 50, onboardingCredits: 0 });
  const { secret } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' });
  const preview = async () => {
    const res = await fetch(`${api.baseUrl}/v1/ingest/file`, {
      method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
      body: JSON.stringify({ filename: 'scan.pdf', contentType: 'application/pdf', contentBase64: scan.toString('base64') }),
    });
    return { status: res.status, headers: res.headers, body: (await res.json()) as { error?: { code: string; message: string }; plan?: unknown } };
  };
  return { accountId: a.id, preview };
}

async function settledAsFailed(accountId: string) {
  const previews = await sql<{ id: string; status: string }>('select id, status from provider_preview where account_id = ?', [accountId]);
  expect(previews.map((p) => p.status)).toEqual(['failed']);
  expect(await sql('select page from ocr_page where owner_id = ?', [previews[0]!.id])).toEqual([]);
  const [r] = await sql<{ status: string; charged: number; refunded: number }>('select status, charged, refunded from credit_reservation where id = ?', [previews[0]!.id]);
  expect(r).toEqual({ status: 'settled', charged: 0, refunded: 3 });
}

/** Extraction processes (tinypool children) of this test process. */
const extractionProcesses = () => extractionProcessesOf(process.pid);

describe('a provider-backed preview that does not finish', () => {
  it('stopped by the CPU limit: 502 processing_interrupted, no plan, the unfinished pages refunded', { timeout: 120_000 }, async () => {
    const { accountId, preview } = await setup({ EXTRACTION_CPU_SECONDS: '1' });
    const r = await preview();
    expect(r.status).toBe(502);
    expect(r.body.error!.code).toBe('processing_interrupted');
    expect(r.body.plan).toBeUndefined();
    expect(r.headers.get('x-service-credit-cost')).toBe('0');
    expect(r.headers.get('x-service-credit-remaining')).toBe('50');
    await settledAsFailed(accountId);
  });

  it('out of time: 502 processing_interrupted', { timeout: 120_000 }, async () => {
    const { accountId, preview } = await setup({ OCR_PREVIEW_TIMEOUT_SECONDS: '1' });
    const r = await preview();
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'processing_interrupted', message: expect.stringContaining('it ran out of time') });
    await settledAsFailed(accountId);
  });

  it('its extraction process killed during OCR: 502 processing_outcome_unverified', { timeout: 120_000 }, async () => {
    const { accountId, preview } = await setup({ EXTRACTION_MEMORY_MB: '4096' });
    const pending = preview();
    await expect.poll(async () => (await sql('select 1 from provider_preview where account_id = ?', [accountId])).length, { timeout: 60_000, interval: 50 }).toBe(1);
    await new Promise((r) => setTimeout(r, 500)); // the OCR task has started
    const pids = await extractionProcesses();
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, 'SIGKILL');
    const r = await pending;
    expect(r.status).toBe(502);
    expect(r.body.error!.code).toBe('processing_outcome_unverified');
    expect(r.body.plan).toBeUndefined();
    await settledAsFailed(accountId);
  });
});
