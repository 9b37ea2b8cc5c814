/** What an answerer sees of one piece of evidence. */
export type AnswerEvidence = { citationHandle: string; text: string; label: string };

export type AnswerSentence = { text: string; citations: string[] };

export type ProviderUsage = { promptTokens: number; completionTokens: number; totalTokens: number };

export type AnswerConfig =
  | { mode: 'builtin' }
  | { mode: 'disabled' }
  | {
      mode: 'openai';
      url: string;
      model: string;
      apiKey: string | undefined;
      timeoutMs: number;
      /** Most provider-work credits one answer may cost (reserved up front, unused part refunded). */
      maxCredits: number;
      tokensPerCredit: number;
    };
