import type { Logger } from '../../platform/logger.ts';
import { builtinAnswer } from './extractive.ts';
import { ProviderError, providerAnswer } from './provider.ts';
import type { AnswerConfig } from '../../platform/config.ts';
import type { AnswerEvidence, AnswerSentence, ProviderUsage } from './types.ts';

export type { AnswerEvidence } from './types.ts';

/** Evidence that disagrees (the result's conflicts): an answer citing any of it says so. */
export type AnswerConflict = { topic: string; citationHandles: string[]; statements: string[] };

export type AnswerOutcome = {
  execution: 'ready' | 'provider_required' | 'degraded';
  answer: {
    disposition: 'partial' | 'insufficient_evidence';
    text: string;
    sentences: AnswerSentence[];
    answerer: 'builtin-extractive' | 'provider';
    droppedSentences: number;
  } | null;
  provider: { name: string | null; model: string | null; called: boolean; usage: ProviderUsage | null; credits: number };
  failure: string | null;
  /** Why the built-in answerer found no answer: which part of the question no evidence covers (a gap of the result). */
  gap?: { code: 'answer_not_stated'; message: string; terms: string[] } | null;
};

/** Most provider-work credits an answer can cost with this configuration (reserved before work). */
export function maxProviderCredits(cfg: AnswerConfig): number {
  return cfg.mode === 'openai' ? cfg.maxCredits : 0;
}

function providerCredits(cfg: AnswerConfig, usage: ProviderUsage | null, called: boolean): number {
  if (cfg.mode !== 'openai' || !called) return 0;
  // A call without reported usage is charged its maximum: completed provider work may stay charged.
  if (!usage) return cfg.maxCredits;
  return Math.min(cfg.maxCredits, Math.max(1, Math.ceil(usage.totalTokens / cfg.tokensPerCredit)));
}

/**
 * An answer never states a side of a known conflict as plain fact: for each conflict it cites, a note
 * (generated, marked `note: conflict`) cites every side and says to ask which is right.
 */
export function flagConflicts(sentences: AnswerSentence[], conflicts: AnswerConflict[]): AnswerSentence[] {
  const cited = new Set(sentences.flatMap((s) => s.citations));
  const notes = conflicts
    .filter((c) => c.citationHandles.some((h) => cited.has(h)))
    .map((c) => ({
      text: `Note: memory holds conflicting statements about this (${c.statements.map((t) => `"${t.trim()}"`).join(' versus ')}); none of them is confirmed, so ask which is right.`,
      citations: c.citationHandles,
      note: 'conflict' as const,
    }));
  return [...sentences, ...notes];
}

const ready = (found: AnswerSentence[], answerer: 'builtin-extractive' | 'provider', dropped: number, conflicts: AnswerConflict[]) => {
  const sentences = flagConflicts(found, conflicts);
  return {
    disposition: found.length ? ('partial' as const) : ('insufficient_evidence' as const),
    text: sentences.map((s) => s.text).join(' '),
    sentences,
    answerer,
    droppedSentences: dropped,
  };
};

/** Answer mode (spec 2.3): one of the four rows of the answer-mode table. */
export async function answerQuery(
  cfg: AnswerConfig, query: string, found: { evidence: AnswerEvidence[]; conflicts?: AnswerConflict[] }, logger: Logger,
): Promise<AnswerOutcome> {
  const { evidence, conflicts = [] } = found;
  const noProvider = { name: null, model: null, called: false, usage: null, credits: 0 };
  if (cfg.mode === 'disabled') return { execution: 'provider_required', answer: null, provider: noProvider, failure: null };
  if (cfg.mode === 'builtin') {
    const found = builtinAnswer(query, evidence);
    return {
      execution: 'ready', answer: ready(found.sentences, 'builtin-extractive', 0, conflicts), provider: noProvider, failure: null,
      gap: found.why ? { code: 'answer_not_stated', ...found.why } : null,
    };
  }
  const base = { name: 'openai-compatible', model: cfg.model };
  if (evidence.length === 0) {
    // Nothing to cite: no call is made and nothing is spent.
    return { execution: 'ready', answer: ready([], 'provider', 0, conflicts), provider: { ...base, called: false, usage: null, credits: 0 }, failure: null };
  }
  try {
    const r = await providerAnswer(cfg, query, evidence, logger);
    return {
      execution: 'ready',
      answer: ready(r.sentences, 'provider', r.dropped, conflicts),
      provider: { ...base, called: true, usage: r.usage, credits: providerCredits(cfg, r.usage, true) },
      failure: null,
    };
  } catch (err) {
    if (!(err instanceof ProviderError)) throw err;
    logger.warn({ err: err.message }, 'answer provider failed; answer degraded');
    const usage = err.usage;
    return {
      execution: 'degraded',
      answer: null,
      provider: { ...base, called: true, usage, credits: usage ? providerCredits(cfg, usage, true) : 0 },
      failure: err.message,
    };
  }
}
