import type { EntityManager } from '@mikro-orm/postgresql';
import { answerQuery, maxProviderCredits, type AnswerConfig, type AnswerEvidence, type AnswerOutcome } from '../answer/index.ts';
import type { Principal } from '../auth/principal.ts';
import type { Preset } from '../contracts/account.ts';
import type { QueryRequest, QueryResult } from '../contracts/query.ts';
import { AppError, forbidden } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { AfterRetrievalError, runMetered } from '../metering/operation.ts';
import { resolveBoundary, type Boundary } from '../retrieval/boundary.ts';
import { fetchCited } from '../retrieval/candidates.ts';
import { citationKey, openCitation } from '../retrieval/citations.ts';
import { claimConflicts } from '../retrieval/conflicts.ts';
import { analysis, retrieve, type Retrieval } from '../retrieval/retrieve.ts';
import type { SearchIndex } from '../retrieval/search-index.ts';
import { requestHash } from '../idempotency.ts';
import { abandonOperation, beginOperation, completeOperation } from './operations.ts';
import { assemble, type Assembled } from './result.ts';

/** Everything one query needs besides the caller and the request. */
export type QueryDeps = {
  em: EntityManager;
  idempotencyRetentionMs: number;
  answer: AnswerConfig;
  logger: Logger;
  requestId: string;
  /** This process's in-memory impact index; absent = PostgreSQL ranks every query's source records. */
  searchIndex?: SearchIndex;
};

export type QueryResponse = { result: QueryResult; headers: Record<string, string> };

const PRESET_RANK: Record<Preset, number> = { efficient: 0, accuracy: 1 };

/** Scope and preset rules of spec 5 rule 2; returns the preset the query runs with. */
export function authorizeQuery(principal: Principal, req: Pick<QueryRequest, 'mode' | 'preset'>): Preset {
  if (!principal.scopes.includes('query')) throw forbidden('This credential lacks the scope query.');
  if (req.mode === 'answer' && !principal.scopes.includes('query.answer')) {
    throw new AppError(403, 'query_answer_not_authorized', 'Answer mode needs the scope query.answer.');
  }
  if (req.preset && PRESET_RANK[req.preset] > PRESET_RANK[principal.maxPreset]) {
    throw new AppError(403, 'preset_not_authorized', `This credential's preset ceiling is ${principal.maxPreset}.`);
  }
  // An omitted preset means the default (accuracy) capped at the credential's ceiling.
  return req.preset ?? (PRESET_RANK.accuracy > PRESET_RANK[principal.maxPreset] ? principal.maxPreset : 'accuracy');
}

type Work = { assembled: Assembled; retrieval: Retrieval | null; answer: AnswerOutcome | null };

async function citationLookup(deps: QueryDeps, boundary: Boundary, handle: string): Promise<Retrieval> {
  const started = performance.now();
  const key = await citationKey(deps.em);
  const ref = openCitation(key, boundary.accountId, handle);
  const found = ref ? await fetchCited(deps.em, boundary, ref) : null;
  const ranked = found ? [{ ...found, score: 1 }] : [];
  return {
    ranked,
    semantic: 'off',
    candidates: ranked.length,
    matchedTerms: [],
    unmatchedTerms: [],
    ms: performance.now() - started,
  };
}

/**
 * POST /v1/query, POST /v1/account/answers/query and the query_context MCP tool: authorize, claim the
 * idempotency key (or replay), then reserve credits and run retrieval once, build the mode's output
 * and settle. The stored result and headers are what an exact retry gets back.
 */
export async function runQuery(deps: QueryDeps, principal: Principal, req: QueryRequest): Promise<QueryResponse> {
  const preset = authorizeQuery(principal, req);
  const boundary = await resolveBoundary(deps.em, principal, req);
  const { idempotencyKey, ...inputs } = req;
  const answering = req.mode === 'answer';
  const metering = {
    accountId: principal.accountId,
    metric: 'query' as const,
    baseCost: 1,
    maxProviderCost: answering ? maxProviderCredits(deps.answer) : 0,
    consumeQuota: true,
    // The operation row's completion (or its removal on failure) is a synchronous commit that
    // precedes every answer, so reserve and settle need not wait for their own disk flush.
    flushLater: true,
  };
  // A new claim reserves the credits in the same round trip, and selects the query's analysis (its
  // retrieval's first reads) with them; a replay reserves and analyses nothing.
  const analysed = req.citationHandle ? null : analysis(boundary, req.query, preset);
  const begun = await beginOperation(deps.em, {
    alongside: analysed,
    accountId: principal.accountId,
    idempotencyKey,
    requestHash: requestHash({ ...inputs, preset, audiences: principal.audiences }),
    retentionMs: deps.idempotencyRetentionMs,
    reserve: metering,
  });
  if (begun.kind === 'replay') {
    const stored = begun.stored.result as QueryResult;
    return {
      result: { ...stored, operation: { ...stored.operation, replayed: true, requestId: deps.requestId } },
      headers: { ...begun.stored.headers, 'x-service-idempotent-replay': 'true' },
    };
  }

  try {
    const metered = await runMetered(
      { em: deps.em, logger: deps.logger },
      { ...metering, ...(begun.reserved ? { reserved: begun.reserved } : {}) },
      async () => {
        // A retrieval failure throws as is: everything is refunded (cost 0).
        const retrieval = req.citationHandle
          ? await citationLookup(deps, boundary, req.citationHandle)
          : await retrieve(deps.em, boundary, req.query, preset, { index: deps.searchIndex, ...(analysed && begun.alongside ? { analyzed: { analysis: analysed, row: begun.alongside } } : {}) });
        try {
          const key = await citationKey(deps.em);
          const claimIds = retrieval.ranked.flatMap((c) => (c.ref.table === 'claim' ? [c.ref.id] : []));
          const knownConflicts = await claimConflicts(deps.em, boundary, claimIds);
          const assembled = assemble({ req, preset, retrieval, boundary, key, accountId: principal.accountId, knownConflicts });
          let answer: AnswerOutcome | null = null;
          if (answering) {
            const evidence: AnswerEvidence[] = assembled.evidence.map((e) => ({ citationHandle: e.citationHandle, text: e.text, label: e.label }));
            answer = await answerQuery(deps.answer, req.query ?? '', evidence, deps.logger, assembled.conflicts);
          }
          const work: Work = { assembled, retrieval, answer };
          return { value: work, outcome: 'completed' as const, providerCost: answer?.provider.credits ?? 0 };
        } catch (err) {
          // Canonical retrieval has happened: the base credit is kept (spec 8 rule 2).
          throw new AfterRetrievalError(err);
        }
      },
    );
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
    await completeOperation(deps.em, begun.operationId, { result, headers: metered.headers });
    return { result, headers: metered.headers };
  } catch (err) {
    await abandonOperation(deps.em, begun.operationId).catch((e: unknown) =>
      deps.logger.error({ err: e }, 'could not release a failed query operation'),
    );
    throw err;
  }
}
