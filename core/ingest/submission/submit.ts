import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal, Reach } from '../../auth/principal.ts';
import { MAX_FILE_BYTES } from '../../contracts/ingest.ts';
import { AppError } from '../../../platform/errors.ts';
import { sha256Hex } from '../../../platform/hash.ts';
import { assertSameRequest, requestHash } from '../../idempotency.ts';
import { lockBalance } from '../../metering/ledger.ts';
import { consumeQuota, quotaHeaders, readQuota } from '../../metering/quotas.ts';
import type { FreeWorkLimiter } from '../../../platform/ops/free-work.ts';
import { ExtractionError, type SupportedContentType } from '../extract/types.ts';
import type { Previewable } from '../prepare/prepare.ts';
import { ExtractionProcessLost, type ExtractionPool } from '../extraction/pool.ts';
import { fetchSource, invalidIngest } from '../fetch-source.ts';
import { findJob, insertSubmission, jobOfKey, type Job } from '../jobs.queries.ts';
import { providerBackedPreview, withRecognisedText, type OcrPlan, type ProviderPreviewDeps } from '../ocr/preview.ts';
import { handOverPreview, type ExactPreview } from '../ocr/pages.queries.ts';
import { previewedPages } from '../ocr/reuse.ts';
import { FetchRefusedError } from '../../../platform/net/safe-fetch.ts';
import { assertFetchableUrl, parseSourceUrl, type UrlPolicy } from '../../../platform/net/url-safety.ts';

export type IngestDeps = {
  em: EntityManager;
  /** Starts (or joins) a job's workflow (temporal/starts.ts). */
  startJob: (job: { id: string; kind: 'url' | 'file'; accountId: string; contentType?: string | null }) => Promise<unknown>;
  policy: UrlPolicy;
  fetchTimeoutMs: number;
  /** Where dry runs extract and live uploads are checked: never on this process's event loop. */
  extraction: ExtractionPool;
  freeWork: FreeWorkLimiter;
  /** Who reads scanned pages, the budgets of previews that need it, and where their trouble is logged. */
  ocr: Omit<ProviderPreviewDeps, 'em'>;
};

const invalid = invalidIngest;

// Dry runs -----------------------------------------------------------------------------------------

/**
 * Extraction refusals are the caller's input: 400 invalid_ingest_request with the public reason. An
 * extraction process stopped from outside is nobody's input: 502 ingest_job_failed, worth a retry.
 */
async function refusedAs400<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof ExtractionError) throw invalid(err.publicMessage);
    if (err instanceof ExtractionProcessLost) {
      throw new AppError(502, 'ingest_job_failed', `The file could not be checked: ${lowerFirst(err.message)} Nothing was charged.`, { 'retry-after': '1' });
    }
    throw err;
  }
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1);

export async function previewUrl(deps: IngestDeps, principal: Principal, rawUrl: string) {
  const url = parseSourceUrl(rawUrl);
  await assertFetchableUrl(url, deps.policy);
  return deps.freeWork.run(principal.accountId, async () => {
    let fetched;
    try {
      fetched = await fetchSource(deps.policy, url, deps.fetchTimeoutMs);
    } catch (err) {
      if (err instanceof FetchRefusedError) {
        throw new AppError(502, 'ingest_job_failed', `The preview could not safely produce a plan: ${err.publicMessage}`);
      }
      throw err;
    }
    if (!fetched.supportedType) {
      throw invalid(`The URL serves ${fetched.contentType ?? 'an unknown content type'}, which is not supported.`);
    }
    return planOf(deps, principal.accountId, { bytes: fetched.bytes, contentType: fetched.supportedType, finalUrl: fetched.finalUrl });
  });
}

/** The plan of a dry-run upload: what live processing would make of these bytes. Persists nothing. */
export async function previewFile(deps: IngestDeps, principal: Principal, bytes: Buffer, contentType: SupportedContentType) {
  return deps.freeWork.run(principal.accountId, () => planOf(deps, principal.accountId, { bytes, contentType, finalUrl: null }));
}

export type Previewed = { plan: OcrPlan; headers: Record<string, string> };

/**
 * A dry run's plan: free when the built-in extractors suffice; provider-backed (paid, budgeted:
 * ./ocr/preview.ts) when a PDF has scanned pages.
 */
async function planOf(deps: IngestDeps, accountId: string, doc: Previewable): Promise<Previewed> {
  const { bytes, contentType } = doc;
  const first = await refusedAs400(deps.extraction.preview(accountId, doc));
  if (!('needsOcr' in first)) return { plan: first, headers: {} };
  // The same bytes were previewed with OCR lately: that text is used again, without a provider call.
  const preview = exactPreview(deps, accountId, sha256Hex(bytes), contentType);
  const stored = await previewedPages(deps.em, preview);
  if (stored && first.needsOcr.every((n) => stored.some((p) => p.page === n))) {
    const again = await refusedAs400(deps.extraction.preview(accountId, { ...doc, ocr: stored }));
    if (!('needsOcr' in again)) return { plan: withRecognisedText(again, stored), headers: {} };
  }
  return providerBackedPreview({ ...deps.ocr, em: deps.em }, accountId, { bytes, sha256: preview.sha256, contentType, needsOcr: first.needsOcr }, (ocr) =>
    deps.extraction.preview(accountId, { ...doc, ocr }));
}

const exactPreview = (deps: IngestDeps, accountId: string, sha256: string, contentType: string): ExactPreview =>
  ({ accountId, sha256, contentType, retentionMs: deps.ocr.ocr.previewRetentionMs });

/** Decoded size of base64 text, computed from its length alone (nothing is decoded). */
export function decodedBase64Size(b64: string): number {
  const padding = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
  return Math.floor((b64.length * 3) / 4) - padding;
}

export function decodeUpload(contentBase64: string): Buffer {
  const compact = contentBase64.replace(/\s+/g, '');
  if (decodedBase64Size(compact) > MAX_FILE_BYTES) {
    throw new AppError(413, 'payload_too_large', `Files may be at most ${MAX_FILE_BYTES} bytes.`);
  }
  if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*={0,2}$/.test(compact)) {
    throw new AppError(400, 'validation_error', 'contentBase64 is not valid base64.');
  }
  return Buffer.from(compact, 'base64');
}

// Live submissions ---------------------------------------------------------------------------------

type LiveFields = { datedAt?: string; idempotencyKey?: string };

function requireLive(body: LiveFields): { datedAt: string; idempotencyKey: string } {
  if (!body.datedAt) throw invalid('Live submission (dryRun false) needs datedAt (YYYY-MM-DD).');
  if (!body.idempotencyKey) throw invalid('Live submission (dryRun false) needs an idempotencyKey (8 to 160 characters).');
  return { datedAt: body.datedAt, idempotencyKey: body.idempotencyKey };
}

export type Submitted = { job: Job; created: boolean; headers: Record<string, string> };

/**
 * Creates the job (or finds the one this idempotency key already made) and makes sure its workflow
 * runs. The account's balance row serialises concurrent submissions, so one key yields one job and one
 * quota unit however many requests race.
 */
async function createJob(
  deps: IngestDeps,
  reach: Reach,
  input: {
    kind: 'url' | 'file';
    idempotencyKey: string;
    requestHash: string;
    datedAt: string;
    sourceUrl?: string;
    filename?: string;
    contentType?: string;
    /** The upload, with the sha256 of its bytes computed once for the request hash, preview reuse and the blob row. */
    blob?: { bytes: Buffer; sha256: string; contentType: string };
    /** The submitting key's audience label (its first), stamped on the source. */
    audience: string | null;
  },
): Promise<Submitted> {
  const accountId = reach.accountId;
  const result = await deps.em.transactional(async (tx) => {
    await lockBalance(tx, accountId);
    const existing = await jobOfKey(tx, accountId, input.idempotencyKey);
    if (existing) {
      assertSameRequest({ requestHash: existing.request_hash, audience: existing.audience }, input.requestHash, reach,
        'This idempotencyKey was used for a different submission.');
      return { jobId: existing.id, created: false, quota: await readQuota(tx, accountId, 'ingest') };
    }
    const jobId = randomUUID();
    // Queueing the bytes of a provider-backed preview takes its OCR text, and the allowance unit it spent.
    const reused = input.blob?.contentType === 'application/pdf' &&
      (await handOverPreview(tx, exactPreview(deps, accountId, input.blob.sha256, input.blob.contentType), jobId));
    const quota = reused ? await readQuota(tx, accountId, 'ingest') : await consumeQuota(tx, accountId, 'ingest');
    await insertSubmission(tx, { id: jobId, accountId, ...input });
    return { jobId, created: true, quota };
  });
  const job = (await findJob(deps.em.fork(), result.jobId))!;
  // Started with an id derived from the job: a replay (or a retry after a failed start) joins it.
  if (job.status === 'queued') {
    await deps.startJob({ id: job.id, kind: input.kind, accountId, contentType: input.contentType });
  }
  return { job, created: result.created, headers: quotaHeaders(result.quota) };
}

export async function submitUrl(
  deps: IngestDeps,
  principal: Principal,
  body: { url: string } & LiveFields,
): Promise<Submitted> {
  const live = requireLive(body);
  const url = parseSourceUrl(body.url);
  await assertFetchableUrl(url, deps.policy);
  return createJob(deps, principal, {
    kind: 'url',
    idempotencyKey: live.idempotencyKey,
    requestHash: requestHash({ kind: 'url', url: url.href, datedAt: live.datedAt }),
    datedAt: live.datedAt,
    sourceUrl: url.href,
    audience: principal.audiences?.[0] ?? null,
  });
}

export async function submitFile(
  deps: IngestDeps,
  principal: Principal,
  body: { filename: string; contentType: SupportedContentType; bytes: Buffer } & LiveFields,
): Promise<Submitted> {
  const live = requireLive(body);
  // Bytes that cannot be what they claim are refused now, before a job exists or a unit is spent.
  await refusedAs400(deps.extraction.check(principal.accountId, body.bytes, body.contentType));
  const sha256 = sha256Hex(body.bytes);
  return createJob(deps, principal, {
    kind: 'file',
    idempotencyKey: live.idempotencyKey,
    requestHash: requestHash({ kind: 'file', filename: body.filename, contentType: body.contentType, sha: sha256, datedAt: live.datedAt }),
    datedAt: live.datedAt,
    filename: body.filename,
    contentType: body.contentType,
    blob: { bytes: body.bytes, sha256, contentType: body.contentType },
    audience: principal.audiences?.[0] ?? null,
  });
}
