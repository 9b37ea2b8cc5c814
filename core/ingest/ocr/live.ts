/**
 * Live OCR of an ingest job's scanned pages: the ingest workflow's recogniseIngestPages activity, run
 * when the build step found pages without a text layer that no preview recognised. Pages go to the
 * provider in batches; each batch reserves its credits before the provider runs (deterministic
 * reservation id), and its text is stored and its reservation settled in one transaction. A retry
 * (worker killed, activity timed out) skips the stored batches and re-reserves the others under the
 * same ids, so every page is billed once however often the activity runs. A batch's reservation that
 * the settlement sweeper settled meanwhile (work that outlived SETTLEMENT_GRACE_SECONDS) is followed
 * by a successor reservation (the next id of the batch's chain), so the pages stored are always charged.
 */
import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../../platform/errors.ts';
import { deterministicUuid } from '../../../platform/ids.ts';
import { getBalance } from '../../metering/ledger.ts';
import { reservationOf } from '../../metering/reservations.queries.ts';
import { reserve, settle, type ReserveInput } from '../../metering/reservations.ts';
import { ExtractionError } from '../extract/types.ts';
import { storedBytes } from '../jobs.queries.ts';
import { readAll } from '../extraction/parts.ts';
import { jobForOcr, storedPages, storePages } from './pages.queries.ts';
import { verifiedPages, type TextProvider } from './provider.ts';

/** Pages per provider call: each batch is one extraction task (within EXTRACTION_CPU_SECONDS) and one heartbeat of progress. */
export const OCR_BATCH_PAGES = 4;

const noCredits = (pages: number) =>
  new AppError(402, 'account_credits_exhausted', `Not enough credits to recognise ${pages} scanned page${pages === 1 ? '' : 's'} (OCR).`);

export async function recogniseJobPages(
  em: EntityManager,
  provider: TextProvider,
  input: { jobId: string; pages: number[] },
  progress: (pagesDone: number) => void,
): Promise<{ recognised: number }> {
  const job = await jobForOcr(em, input.jobId);
  if (!job || job.status !== 'queued') return { recognised: 0 };
  const done = new Set((await storedPages(em, input.jobId)).map((p) => p.page));
  const todo = input.pages.filter((p) => !done.has(p));
  if (todo.length === 0) return { recognised: 0 };
  const rate = provider.creditsPerPage;
  // Credits for every page are checked before any work (spec 3.3: a job that cannot pay fails, not retryable).
  const balance = await getBalance(em, job.account_id);
  if (balance.monthly + balance.onboarding < todo.length * rate) throw noCredits(todo.length);
  const bytes = await readAll(storedBytes(em, input.jobId, job.size));

  const owner = { id: input.jobId, accountId: job.account_id };
  for (let i = 0; i < todo.length; i += OCR_BATCH_PAGES) {
    const batch = todo.slice(i, i + OCR_BATCH_PAGES);
    const hold = (reservationId: string): ReserveInput =>
      ({ reservationId, accountId: job.account_id, metric: 'ingest', baseCost: 0, maxProviderCost: batch.length * rate, consumeQuota: false });
    const chain = (n: number) => deterministicUuid(`ocr:${input.jobId}:${batch.join(',')}${n ? `:${n}` : ''}`);
    let n = 0;
    for (; ; n++) {
      const reservationId = chain(n);
      try {
        await reserve(em, hold(reservationId));
        break;
      } catch (err) {
        if (err instanceof AppError && err.status === 402) throw noCredits(todo.length - i);
        if (!(err instanceof AppError && err.status === 409)) throw err;
        // 409: an earlier attempt reserved this id. Still held: it died before storing; the hold is used
        // now. Settled (by the sweeper, or refused): the next id of the chain holds this attempt's work.
        if ((await reservationOf(em, reservationId))?.status !== 'settled') break;
      }
    }
    let pages;
    try {
      pages = verifiedPages(batch, await provider.recognise(job.account_id, bytes, batch));
    } catch (err) {
      // The document refused OCR (unreadable, over a limit): nothing was recognised, nothing is charged.
      if (err instanceof ExtractionError) await settle(em, chain(n), 'recognition_failed');
      throw err;
    }
    if (!pages) throw new Error(`the ${provider.name} provider answered pages ${batch.join(', ')} incompletely`);
    await em.transactional(async (tx) => {
      // Settled first: if the sweeper settled the hold meanwhile, the pages are charged to a successor
      // reservation in this same transaction, or (no credits) not stored at all.
      let charged = chain(n);
      for (let k = n + 1; (await settle(tx, charged, 'completed', { providerCostUsed: batch.length * rate })).already; k++) {
        charged = chain(k);
        try {
          await reserve(tx, hold(charged));
        } catch (err) {
          if (err instanceof AppError && err.status === 402) throw noCredits(todo.length - i);
          if (!(err instanceof AppError && err.status === 409)) throw err;
        }
      }
      await storePages(tx, owner, pages, charged);
    });
    progress(i + batch.length);
  }
  return { recognised: todo.length };
}
