import type { EntityManager } from '@mikro-orm/postgresql';
import type { AnswerConfig } from '../../platform/config.ts';
import { answerQuery, maxProviderCredits, type AnswerEvidence, type AnswerOutcome } from '../answer/index.ts';
import type { Principal } from '../auth/principal.ts';
import type { Config } from '../../platform/config.ts';
import type { Preset } from '../contracts/account.ts';
import type { QueryRequest, QueryResult } from '../contracts/query.ts';
import { AppError, forbidden } from '../../platform/errors.ts';
import { requestHash } from '../idempotency.ts';
import type { Logger } from '../../platform/logger.ts';
import { AfterRetrievalError, runMetered } from '../metering/operation.ts';
import type { Settled, Reserved } from '../metering/reservations.ts';
import { resolveBoundary, type Boundary } from '../retrieval/boundary.ts';
import { fetchCited } from '../retrieval/candidates.ts';
import { createCitations, type Citations } from '../retrieval/citations.ts';
import { claimConflicts } from '../retrieval/conflicts.ts';
import { analysis, retrieve, type Analysis, type Retrieval } from '../retrieval/retrieve.ts';
import type { SearchIndex } from '../retrieval/search-index.ts';
import { beginOperation } from './operations.ts';
import { abandonOperation, completeOperation, type StoredOperation } from './operations.queries.ts';
import { assemble, type Assembled } from './result.ts';

/** What every query of a process shares, made once (buildApp): settings and the caches. */
export type QueryServices = {
  idempotencyRetentionMs: number;
  answer: AnswerConfig;
  /** Citation handles and their caches (retrieval/citations.ts). */
  citations: Citations;
  /** This process's in-memory impact index; absent = PostgreSQL ranks every query's source records. */
  searchIndex?: SearchIndex;
};

/** Everything one query needs besides the caller and the request: the services, and the request's own. */
export type QueryDeps = QueryServices & { em: EntityManager; logger: Logger; requestId: string };

export function queryServices(config: Pick<Config, 'query'>, searchIndex?: SearchIndex): QueryServices {
  return { idempotencyRetentionMs: config.query.idempotencyRetentionMs, answer: config.query.answer, citations: createCitations(), searchIndex };
}

export type QueryResponse = { result: QueryResult; headers: Record<string, string> };

const PRESET_RANK: Record<Preset, number> = { efficient: 0, accuracy: 1 };

/** Scope and preset rules of spec 5 rule 2; returns the preset the query runs with. */
export function authorizeQuery(principal: Principal, req: Pick<QueryRequest, 'mode' | 'preset'>): Preset {
  // memory.read alone (an MCP OAuth connection) searches native memory only (resolveBoundary).
  if (!principal.scopes.includes('query') && !principal.scopes.includes('memory.read')) throw forbidden('This credential lacks the scope query.');
  if (req.mode === 'answer' && !principal.scopes.includes('query.answer')) {
    throw new AppError(403, 'query_answer_not_authorized', 'Answer mode needs the scope query.answer.');
  }
  if (req.preset && PRESET_RANK[req.preset] > PRESET_RANK[principal.maxPreset]) {
    throw new AppError(403, 'preset_not_authorized', `This credential's preset ceiling is ${principal.maxPreset}.`);
  }
  // An omitted preset means the default (accuracy) capped at the credential's ceiling.
  return req.preset ?? (PRESET_RANK.accuracy > PRESET_RANK[principal.maxPreset] ? principal.maxPreset : 'accuracy');
}

/** One query's settled facts: who asks what, inside which boundary, with which preset. */
type Asked = { principal: Principal; req: QueryRequest; preset: Preset; boundary: Boundary };
type Work = { assembled: Assembled; retrieval: Retrieval | null; answer: AnswerOutcome | null };

/**
 * POST /v1/query, POST /v1/account/answers/query and the query_context MCP tool: authorize, claim the
 * idempotency key with the credits and the analysis (operations.ts CLAIM_AND_ANALYSE), then either
 * replay the stored result, or do the work (retrieval once, the mode's output) metered and finish
 * (store the result and headers an exact retry gets back). A failed query releases its key.
 */
export async function runQuery(deps: QueryDeps, principal: Principal, req: QueryRequest): Promise<QueryResponse> {
  const preset = authorizeQuery(principal, req);
  const boundary = await resolveBoundary(deps.em, principal, req);
  const asked: Asked = { principal, req, preset, boundary };
  const { idempotencyKey, ...inputs } = req;
  const metering = {
    accountId: principal.accountId,
    metric: 'query' as const,
    baseCost: 1,
    maxProviderCost: req.mode === 'answer' ? maxProviderCredits(deps.answer) : 0,
    consumeQuota: true,
    // The operation row's completion (or its removal on failure) is a synchronous commit that
    // precedes every answer, so reserve and settle need not wait for their own disk flush.
    flushLater: true,
  };
  const analysed = req.citationHandle ? null : analysis(boundary, req.query, preset);
  const begun = await beginOperation(deps.em, {
    analysis: analysed,
    accountId: principal.accountId,
    idempotencyKey,
    requestHash: requestHash({ ...inputs, preset, audiences: principal.audiences }),
    retentionMs: deps.idempotencyRetentionMs,
    reserve: metering,
  });
  if (begun.kind === 'replay') return replay(begun.stored, deps.requestId);
  try {
    const metered = await runMetered(
      { em: deps.em, logger: deps.logger },
      { ...metering, ...(begun.reserved ? { reserved: begun.reserved } : {}) },
      () => work(deps, asked, analysed && begun.analysed ? { analysis: analysed, row: begun.analysed } : undefined),
    );
    return await finish(deps, begun.operationId, idempotencyKey, metered);
  } catch (err) {
    await abandonOperation(deps.em, begun.operationId).catch((e: unknown) =>
      deps.logger.error({ err: e }, 'could not release a failed query operation'),
    );
    throw err;
  }
}

/** An exact retry of a completed query: its stored result and headers, marked replayed, spending nothing. */
function replay(stored: StoredOperation, requestId: string): QueryResponse {
  const result = stored.result as QueryResult;
  return {
    result: { ...result, operation: { ...result.operation, replayed: true, requestId } },
    headers: { ...stored.headers, 'x-service-idempotent-replay': 'true' },
  };
}

/**
 * The metered work: retrieval (or the cited evidence), then the mode's output. A retrieval failure
 * throws as is (everything is refunded, cost 0); a failure after it keeps the base credit (spec 8 rule 2).
 */
async function work(deps: QueryDeps, asked: Asked, analyzed?: { analysis: Analysis; row: Record<string, unknown> }) {
  const { req, preset, boundary } = asked;
  const retrieval = req.citationHandle
    ? await citationLookup(deps, boundary, req.citationHandle)
    : await retrieve(deps.em, boundary, req.query, preset, { index: deps.searchIndex, ...(analyzed ? { analyzed } : {}) });
  try {
    const key = await deps.citations.key(deps.em);
    const claimIds = retrieval.ranked.flatMap((c) => (c.ref.table === 'claim' ? [c.ref.id] : []));
    const knownConflicts = await claimConflicts(deps.em, boundary, claimIds);
    const seal = (ref: Parameters<Citations['seal']>[2]) => deps.citations.seal(key, boundary.accountId, ref);
    const assembled = assemble({ req, preset, retrieval, boundary, seal, knownConflicts });
    let answer: AnswerOutcome | null = null;
    if (req.mode === 'answer') {
      const evidence: AnswerEvidence[] = assembled.evidence.map((e) => ({ citationHandle: e.citationHandle, text: e.text, label: e.label }));
      answer = await answerQuery(deps.answer, req.query ?? '', evidence, deps.logger, assembled.conflicts);
    }
    const value: Work = { assembled, retrieval, answer };
    return { value, outcome: 'completed' as const, providerCost: answer?.provider.credits ?? 0 };
  } catch (err) {
    throw new AfterRetrievalError(err);
  }
}

async function citationLookup(deps: QueryDeps, boundary: Boundary, handle: string): Promise<Retrieval> {
  const started = performance.now();
  const key = await deps.citations.key(deps.em);
  const ref = deps.citations.open(key, boundary.accountId, handle);
  const found = ref ? await fetchCited(deps.em, boundary, ref) : null;
  const ranked = found ? [{ ...found, score: 1 }] : [];
  return { ranked, semantic: 'off', rerank: 'off', candidates: ranked.length, matchedTerms: [], unmatchedTerms: [], ms: performance.now() - started };
}

/** The result with its operation block (credits as settled), stored for exact retries. */
async function finish(
  deps: QueryDeps,
  operationId: string,
  idempotencyKey: string,
  metered: { value: Work; headers: Record<string, string>; settled: Settled; reserved: Reserved },
): Promise<QueryResponse> {
  const { assembled, retrieval, answer } = metered.value;
  const result = assembled.finish({
    answer,
    operation: {
      requestId: deps.requestId,
      idempotencyKey,
      replayed: false,
      completedAt: new Date().toISOString(),
      retrievalMs: Math.round((retrieval?.ms ?? 0) * 100) / 100,
      credits: {
        cost: metered.settled.charged,
        reserved: metered.reserved.held,
        refunded: metered.settled.refunded,
        remaining: metered.settled.balance.monthly + metered.settled.balance.onboarding,
      },
      provider: answer?.provider ?? { name: null, model: null, called: false, usage: null, credits: 0 },
    },
  });
  await completeOperation(deps.em, operationId, { result, headers: metered.headers });
  return { result, headers: metered.headers };
}
