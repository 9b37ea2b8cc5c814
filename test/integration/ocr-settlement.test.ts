import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { extractionPoolFor, type ExtractionPool } from '../../core/ingest/extraction/pool.ts';
import { insertSubmission } from '../../core/ingest/jobs.queries.ts';
import { recogniseJobPages } from '../../core/ingest/ocr/live.ts';
import { insertPreview } from '../../core/ingest/ocr/pages.queries.ts';
import { providerBackedPreview } from '../../core/ingest/ocr/preview.ts';
import { localOcrProvider, type TextProvider } from '../../core/ingest/ocr/provider.ts';
import { getBalance } from '../../core/metering/ledger.ts';
import { reserve, settle, staleReservations } from '../../core/metering/reservations.ts';
import { loadConfig } from '../../platform/config.ts';
import { AppError } from '../../platform/errors.ts';
import { sha256Hex } from '../../platform/hash.ts';
import { deterministicUuid } from '../../platform/ids.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { proseLines, scannedPdf } from '../helpers/scanned-pdf.ts';
import { memoryLogger } from '../helpers/services.ts';

// Issue 39 item 5: OCR work that outlives the settlement grace is never free. The settlement states
// an earlier one ("already settled as X"); a provider-backed preview stores its pages only in the
// transaction whose settlement charged them; the sweeper leaves a preview alone while it heartbeats.

let db: TestDatabase;
let pool: ExtractionPool;
const config = loadConfig({ PORT: '8080', TEMPORAL_TASK_QUEUE: 'unused', EXTRACTION_PROCESSES: '1' });
const em = () => db.orm.em.fork();
const sql = async <T>(text: string, params: unknown[]) => em().getConnection().execute<T[]>(text, params);

beforeAll(async () => {
  db = await createTestDatabase();
  pool = extractionPoolFor(config);
}, 60_000);
afterAll(async () => {
  await pool?.close();
  await db?.drop();
});

const GRACE_MS = 300_000;

describe('settlement under any timing', () => {
  it('a second settlement changes nothing and says how the reservation was settled first', async () => {
    const account = await createTestAccount(db.orm);
    const id = randomUUID();
    await reserve(em(), { reservationId: id, accountId: account.id, metric: 'ingest', baseCost: 0, maxProviderCost: 4, consumeQuota: false });
    const first = await settle(em(), id, 'abandoned');
    expect(first).toMatchObject({ charged: 0, refunded: 4, already: null });
    const late = await settle(em(), id, 'completed', { providerCostUsed: 4 });
    expect(late).toMatchObject({ charged: 0, refunded: 4, already: 'abandoned' });
  });

  it('the sweeper skips a running preview that heartbeats within the grace, and sweeps one that went quiet', async () => {
    const account = await createTestAccount(db.orm);
    const id = randomUUID();
    await reserve(em(), { reservationId: id, accountId: account.id, metric: 'ingest', baseCost: 0, maxProviderCost: 2, consumeQuota: false });
    await insertPreview(em(), { id, accountId: account.id, sha256: 'a'.repeat(64), contentType: 'application/pdf', pages: 2 });
    // Work older than the grace, its last heartbeat a minute ago: alive.
    await sql("update credit_reservation set created_at = now() - interval '1 hour' where id = ?", [id]);
    await sql("update provider_preview set heartbeat_at = now() - interval '1 minute' where id = ?", [id]);
    expect(await staleReservations(em(), GRACE_MS, 1000)).not.toContain(id);
    // Quiet for longer than the grace: abandoned.
    await sql("update provider_preview set heartbeat_at = now() - interval '10 minutes' where id = ?", [id]);
    expect(await staleReservations(em(), GRACE_MS, 1000)).toContain(id);
  });

  it('a preview whose hold was settled as abandoned before it finished stores nothing, returns no plan and charges nothing more', { timeout: 120_000 }, async () => {
    const account = await createTestAccount(db.orm);
    const bytes = new Uint8Array(await scannedPdf([1, 2].map(proseLines)));
    const before = await getBalance(em(), account.id);
    // The real local OCR, held after recognising until the sweeper has settled the hold.
    const local = localOcrProvider(pool, config.ocr.creditsPerPage);
    let recognised!: () => void;
    const started = new Promise<void>((resolve) => (recognised = resolve));
    let release!: () => void;
    const swept = new Promise<void>((resolve) => (release = resolve));
    const slow: TextProvider = {
      name: local.name, creditsPerPage: local.creditsPerPage,
      async recognise(accountId, b, pages) {
        const text = await local.recognise(accountId, b, pages);
        recognised();
        await swept;
        return text;
      },
    };
    const deps = { em: em(), provider: slow, ocr: config.ocr, logger: memoryLogger().logger };
    const running = providerBackedPreview(deps, account.id, { bytes, sha256: randomUUID().replace(/-/g, ''), contentType: 'application/pdf', needsOcr: [1, 2] },
      (ocr) => pool.preview(account.id, { bytes, contentType: 'application/pdf', finalUrl: null, ocr })).catch((err: unknown) => err);
    await started;
    const [preview] = await sql<{ id: string }>("select id from provider_preview where account_id = ? and status = 'running'", [account.id]);
    // What the sweeper does to a hold past the grace.
    expect((await settle(em(), preview!.id, 'abandoned')).already).toBeNull();
    release();
    const err = await running;
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 502, code: 'processing_interrupted' });
    expect((err as AppError).message).toContain('already settled as abandoned');
    expect(await sql('select 1 from ocr_page where owner_id = ?', [preview!.id])).toEqual([]);
    expect((await sql<{ status: string }>('select status from provider_preview where id = ?', [preview!.id]))[0]!.status).toBe('failed');
    const after = await getBalance(em(), account.id);
    expect(after.monthly + after.onboarding).toBe(before.monthly + before.onboarding);
  });

  it('a preview that finishes within its hold stores its pages and is charged for them', { timeout: 120_000 }, async () => {
    const account = await createTestAccount(db.orm);
    const bytes = new Uint8Array(await scannedPdf([1].map(proseLines)));
    const before = await getBalance(em(), account.id);
    const deps = { em: em(), provider: localOcrProvider(pool, config.ocr.creditsPerPage), ocr: config.ocr, logger: memoryLogger().logger };
    const { plan } = await providerBackedPreview(deps, account.id, { bytes, sha256: randomUUID().replace(/-/g, ''), contentType: 'application/pdf', needsOcr: [1] },
      (ocr) => pool.preview(account.id, { bytes, contentType: 'application/pdf', finalUrl: null, ocr }));
    expect(plan.recognisedText).toHaveLength(1);
    const [preview] = await sql<{ id: string; status: string }>('select id, status from provider_preview where account_id = ?', [account.id]);
    expect(preview!.status).toBe('ready');
    expect(await sql('select page from ocr_page where owner_id = ?', [preview!.id])).toEqual([{ page: 1 }]);
    const after = await getBalance(em(), account.id);
    expect(before.monthly + before.onboarding - (after.monthly + after.onboarding)).toBe(config.ocr.creditsPerPage);
  });

  /** A queued file job of a scanned one-page PDF, as a live submission stores it. */
  async function scannedJob(accountId: string) {
    const bytes = await scannedPdf([1].map(proseLines));
    const id = randomUUID();
    await em().transactional((tx) => insertSubmission(tx, {
      id, accountId, kind: 'file', idempotencyKey: `k-${id}`, requestHash: id, datedAt: '2026-11-28', filename: 'scan.pdf',
      contentType: 'application/pdf', audience: null, blob: { bytes, sha256: sha256Hex(bytes), contentType: 'application/pdf' },
    }));
    return id;
  }
  const pagesOf = (jobId: string) => sql<{ page: number; reservation_id: string }>('select page, reservation_id from ocr_page where owner_id = ?', [jobId]);
  const reservation = async (id: string) => (await sql<{ status: string; outcome: string; charged: number }>('select status, outcome, charged from credit_reservation where id = ?', [id]))[0];

  it('a live batch whose hold the sweeper settled before an attempt stores its pages under a successor reservation that charges them', { timeout: 120_000 }, async () => {
    const account = await createTestAccount(db.orm);
    const jobId = await scannedJob(account.id);
    const first = deterministicUuid(`ocr:${jobId}:1`);
    // An attempt reserved the batch and died; the sweeper settled its hold as abandoned.
    await reserve(em(), { reservationId: first, accountId: account.id, metric: 'ingest', baseCost: 0, maxProviderCost: config.ocr.creditsPerPage, consumeQuota: false });
    await settle(em(), first, 'abandoned');
    const before = await getBalance(em(), account.id);
    const local = localOcrProvider(pool, config.ocr.creditsPerPage);
    expect(await recogniseJobPages(em(), local, { jobId, pages: [1] }, () => {})).toEqual({ recognised: 1 });
    const [page] = await pagesOf(jobId);
    expect(page!.reservation_id).toBe(deterministicUuid(`ocr:${jobId}:1:1`));
    expect(await reservation(page!.reservation_id)).toEqual({ status: 'settled', outcome: 'completed', charged: config.ocr.creditsPerPage });
    const after = await getBalance(em(), account.id);
    expect(before.monthly + before.onboarding - (after.monthly + after.onboarding)).toBe(config.ocr.creditsPerPage);
  });

  it('a live batch whose hold the sweeper settled while it ran is charged to a successor in the transaction that stores it', { timeout: 120_000 }, async () => {
    const account = await createTestAccount(db.orm);
    const jobId = await scannedJob(account.id);
    const first = deterministicUuid(`ocr:${jobId}:1`);
    const before = await getBalance(em(), account.id);
    const local = localOcrProvider(pool, config.ocr.creditsPerPage);
    // The sweeper runs while the provider works.
    const sweeping: TextProvider = {
      name: local.name, creditsPerPage: local.creditsPerPage,
      async recognise(accountId, b, pages) {
        const text = await local.recognise(accountId, b, pages);
        expect((await settle(em(), first, 'abandoned')).already).toBeNull();
        return text;
      },
    };
    expect(await recogniseJobPages(em(), sweeping, { jobId, pages: [1] }, () => {})).toEqual({ recognised: 1 });
    expect(await reservation(first)).toEqual({ status: 'settled', outcome: 'abandoned', charged: 0 });
    const [page] = await pagesOf(jobId);
    expect(page!.reservation_id).not.toBe(first);
    expect(await reservation(page!.reservation_id)).toEqual({ status: 'settled', outcome: 'completed', charged: config.ocr.creditsPerPage });
    const after = await getBalance(em(), account.id);
    expect(before.monthly + before.onboarding - (after.monthly + after.onboarding)).toBe(config.ocr.creditsPerPage);
  });
});
