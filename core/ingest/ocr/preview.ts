/**
 * Provider-backed previews (spec 4.3 rules 5 and 6): a dry run of a PDF whose pages are scans. Before
 * the provider runs, the per-request and daily provider budgets are checked (402
 * processing_budget_exceeded), one ingest allowance unit is spent and the provider credits are
 * reserved (429 / 402 as for any metered work), in one transaction with the preview's row. The pages
 * are then recognised in batches within OCR_PREVIEW_TIMEOUT_SECONDS and the reservation settled:
 * completed, the whole OCR is charged and the text kept for OCR_PREVIEW_RETENTION_HOURS so queueing the
 * same bytes reuses it (./reuse.ts); refused by the document (no text even after OCR), the live path's
 * 400 invalid_ingest_request and nothing charged; stopped by the deadline or a limit, 502 processing_interrupted
 * with the finished pages charged; an answer that cannot be checked (the extraction process died, a
 * page missing) or a result that could not be recorded, 502 processing_outcome_unverified. A failed
 * preview returns no plan and leaves nothing to reuse.
 */
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../../platform/config.ts';
import { AppError } from '../../../platform/errors.ts';
import type { Logger } from '../../../platform/logger.ts';
import { lockBalance } from '../../metering/ledger.ts';
import { quotaHeaders } from '../../metering/quotas.ts';
import { creditHeaders, reserve, settle, type Reserved } from '../../metering/reservations.ts';
import { ExtractionError, PREVIEW_TEXT_LIMIT, type SupportedContentType } from '../extract/types.ts';
import type { NeedsOcr, Plan } from '../prepare/prepare.ts';
import { processingBudget } from './budgets.ts';
import { OCR_BATCH_PAGES } from './live.ts';
import { expirePreviews, insertPreview, markPreview, storePages, touchPreview } from './pages.queries.ts';
import { verifiedPages, type PageText, type TextProvider } from './provider.ts';

export type ProviderPreviewDeps = { em: EntityManager; provider: TextProvider; ocr: Config['ocr']; logger: Logger };

/** A plan of a PDF with scanned pages, with their recognised text. */
export type OcrPlan = Plan & { recognisedText?: PageText[] };

/** The plan with the recognised pages, as many as fit the preview text limit (about 384 KB). */
export function withRecognisedText(plan: Plan, pages: PageText[]): OcrPlan {
  const shown: PageText[] = [];
  let size = 0;
  for (const p of pages) {
    if (size + p.text.length > PREVIEW_TEXT_LIMIT) break;
    size += p.text.length;
    shown.push(p);
  }
  const cut = shown.length < pages.length ? [`Recognised text is shown for ${shown.length} of ${pages.length} pages (about 384 KB); live processing uses all of it.`] : [];
  return { ...plan, recognisedText: shown, warnings: [...plan.warnings, ...cut] };
}

const budgetExceeded = (message: string, headers: Record<string, string>) => new AppError(402, 'processing_budget_exceeded', message, headers);
const pagesOf = (n: number) => `${n} page${n === 1 ? '' : 's'}`;

/** Checks the budgets, spends the allowance unit and reserves the credits, and records the preview: one transaction. */
async function open(deps: ProviderPreviewDeps, accountId: string, { sha256, contentType, pages }: { sha256: string; contentType: SupportedContentType; pages: number }) {
  const id = randomUUID();
  const cost = pages * deps.provider.creditsPerPage;
  return deps.em.transactional(async (tx) => {
    const balance = await lockBalance(tx, accountId);
    // Read under the balance lock: concurrent previews of the account count each other's pages.
    const budget = await processingBudget(tx, deps.ocr, accountId);
    const headers = creditHeaders(balance, 0);
    if (pages > budget.pagesPerRequest) {
      throw budgetExceeded(`The preview needs OCR of ${pagesOf(pages)}, more than the per-request provider budget of ${pagesOf(budget.pagesPerRequest)}.`, headers);
    }
    if (budget.pagesUsedToday + pages > budget.pagesPerDay) {
      throw budgetExceeded(
        `The preview needs OCR of ${pagesOf(pages)}; ${pagesOf(budget.pagesUsedToday)} of today's provider budget of ${pagesOf(budget.pagesPerDay)} are used.`,
        headers,
      );
    }
    const reserved = await reserve(tx, { reservationId: id, accountId, metric: 'ingest', baseCost: 0, maxProviderCost: cost, consumeQuota: true });
    await insertPreview(tx, { id, accountId, sha256, contentType, pages });
    // Text of previews past their retention (any account's) is no longer reusable: it goes.
    await expirePreviews(tx, deps.ocr.previewRetentionMs);
    return reserved;
  });
}

class Deadline extends Error {}

function within<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Deadline()), Math.max(0, ms));
  });
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
}

/**
 * The plan of a dry run whose PDF has scanned pages (`needsOcr`): OCR by the provider, paid as above,
 * then `planWith` the recognised text. Returns the plan, its credit and quota headers.
 */
export async function providerBackedPreview(
  deps: ProviderPreviewDeps,
  accountId: string,
  input: { bytes: Uint8Array; sha256: string; contentType: SupportedContentType; needsOcr: number[] },
  planWith: (ocr: PageText[]) => Promise<Plan | NeedsOcr>,
): Promise<{ plan: OcrPlan; headers: Record<string, string> }> {
  const rate = deps.provider.creditsPerPage;
  const reserved = await open(deps, accountId, { sha256: input.sha256, contentType: input.contentType, pages: input.needsOcr.length });
  const quota = reserved.quota ? quotaHeaders(reserved.quota) : {};
  const deadline = Date.now() + deps.ocr.previewTimeoutMs;
  const done: PageText[] = [];
  let plan: OcrPlan;
  try {
    for (let i = 0; i < input.needsOcr.length; i += OCR_BATCH_PAGES) {
      const batch = input.needsOcr.slice(i, i + OCR_BATCH_PAGES);
      const pages = verifiedPages(batch, await within(deps.provider.recognise(accountId, input.bytes, batch), deadline - Date.now()));
      if (!pages) throw new Error(`the ${deps.provider.name} provider answered pages ${batch.join(', ')} incompletely`);
      done.push(...pages);
      await touchPreview(deps.em, reserved.reservationId);
    }
    const planned = await planWith(done);
    if ('needsOcr' in planned) throw new Error(`pages ${planned.needsOcr.join(', ')} still have no text after OCR`);
    plan = withRecognisedText({ ...planned, estimatedCredits: done.length * rate }, done);
  } catch (err) {
    throw await failed(deps, reserved, { quota, pagesDone: done.length }, err);
  }
  let settled;
  try {
    // Settled first, in the transaction that stores the pages: they are kept (and reusable) only when
    // this settlement charged them; one settled before (the sweeper's "abandoned") stores nothing.
    settled = await deps.em.transactional(async (tx) => {
      const s = await settle(tx, reserved.reservationId, 'completed', { providerCostUsed: done.length * rate });
      if (s.already) {
        await markPreview(tx, reserved.reservationId, 'failed', done.length);
        return s;
      }
      await storePages(tx, { id: reserved.reservationId, accountId }, done, reserved.reservationId);
      await markPreview(tx, reserved.reservationId, 'ready');
      return s;
    });
  } catch (err) {
    // The OCR ran but its result and charge could not be recorded: the settlement sweeper refunds the
    // hold later (SETTLEMENT_GRACE_SECONDS); the caller must not assume either outcome.
    deps.logger.error({ err, reservationId: reserved.reservationId }, 'provider-backed preview could not be recorded');
    throw new AppError(502, 'processing_outcome_unverified',
      'The preview could not be recorded safely. Keep the request id and contact support before resubmitting this file.',
      { ...creditHeaders(reserved.balance, reserved.held), ...quota });
  }
  const headers = { ...creditHeaders(settled.balance, settled.charged), ...quota };
  if (settled.already) {
    deps.logger.warn({ reservationId: reserved.reservationId, settledAs: settled.already }, 'provider-backed preview finished after its reservation was settled; nothing stored');
    throw new AppError(502, 'processing_interrupted',
      `The preview's OCR outlasted its credit hold, which was already settled as ${settled.already}: nothing more is charged, no plan is returned and no text is kept. Submit the file again.`,
      headers);
  }
  return { plan, headers };
}

/**
 * Settles a preview that did not finish and says why, as the spec names it. The document refused
 * (no text even after OCR, unreadable): the live path's 400 with its message, and nothing charged, as
 * the live path charges nothing for a document it refuses. Stopped by a limit or the deadline: the
 * finished pages stay charged. Otherwise the outcome is not known.
 */
async function failed(deps: ProviderPreviewDeps, reserved: Reserved, { quota, pagesDone }: { quota: Record<string, string>; pagesDone: number }, err: unknown): Promise<AppError> {
  const refused = err instanceof ExtractionError && err.reason !== 'limit';
  const interrupted = err instanceof Deadline || (err instanceof ExtractionError && err.reason === 'limit');
  if (!interrupted && !refused) deps.logger.warn({ err, reservationId: reserved.reservationId }, 'provider-backed preview outcome could not be verified');
  let headers = { ...creditHeaders(reserved.balance, reserved.held), ...quota };
  try {
    const settled = await deps.em.transactional(async (tx) => {
      // The pages recognised count against the daily provider budget, charged or not.
      await markPreview(tx, reserved.reservationId, 'failed', pagesDone);
      return refused
        ? settle(tx, reserved.reservationId, 'recognition_failed')
        : settle(tx, reserved.reservationId, 'failed_after_retrieval', { providerCostUsed: pagesDone * deps.provider.creditsPerPage });
    });
    headers = { ...creditHeaders(settled.balance, settled.charged), ...quota };
  } catch (settleErr) {
    deps.logger.error({ err: settleErr, reservationId: reserved.reservationId }, 'failed preview could not be settled; the sweeper will');
  }
  if (refused) return new AppError(400, 'invalid_ingest_request', err.publicMessage, headers);
  return interrupted
    ? new AppError(502, 'processing_interrupted',
      `OCR of the preview stopped after ${pagesOf(pagesDone)}${err instanceof Deadline ? ': it ran out of time' : `: ${(err as ExtractionError).publicMessage}`}. The recognised pages are charged; no plan was made.`,
      headers)
    : new AppError(502, 'processing_outcome_unverified',
      'The outcome of the preview\'s OCR could not be verified. Keep the request id and contact support before resubmitting this file.', headers);
}
