import { sentenceSpans } from '../text/sentences.ts';
import { contentStems } from '../retrieval/text.ts';
import { isSupported, queryOverlap } from './support.ts';
import type { AnswerEvidence, AnswerSentence } from './types.ts';

const MAX_SENTENCES = 3;
const MIN_OVERLAP = 0.6;
const EVIDENCE_CONSIDERED = 6;

/**
 * The built-in answerer: conservative and extractive. It picks evidence sentences that share most of
 * the question's content words, cites each with the evidence it was taken from, and validates every
 * sentence against that evidence. It never writes a word that is not in the evidence.
 */
export function extractiveAnswer(query: string, evidence: AnswerEvidence[]): AnswerSentence[] {
  const q = new Set(contentStems(query));
  const picked: (AnswerSentence & { overlap: number; order: number })[] = [];
  const seen = new Set<string>();
  evidence.slice(0, EVIDENCE_CONSIDERED).forEach((e, rank) => {
    for (const span of sentenceSpans(e.text, 0, e.text.length, 'bullets')) {
      const text = e.text.slice(span.start, span.end);
      const key = text.toLowerCase().replace(/\s+/g, ' ');
      const overlap = queryOverlap(q, text);
      if (overlap < MIN_OVERLAP || seen.has(key)) continue;
      if (!isSupported(text, [e.text])) continue;
      seen.add(key);
      picked.push({ text, citations: [e.citationHandle], overlap, order: rank * 1000 + span.start });
    }
  });
  return picked
    .sort((a, b) => b.overlap - a.overlap || a.order - b.order)
    .slice(0, MAX_SENTENCES)
    .map(({ text, citations }) => ({ text, citations }));
}
