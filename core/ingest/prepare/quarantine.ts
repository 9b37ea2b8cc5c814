import type { ExtractedDocument } from '../extract/index.ts';
import type { RecordSet } from './records.ts';

// When a finished source is held back (status quarantined) until an operator releases it
// (`npm run --silent admin -- source release --id <sourceId>`). Kept narrow on purpose: text returned
// by the service is always data, so ordinary documents that merely mention instructions are fine.

const INSTRUCTION = [
  /\bignore (all |any )?(the )?(previous|prior|above) (instructions|prompts?)\b/i,
  /\b(disregard|forget) (all |any )?(previous|prior|your) (instructions|rules)\b/i,
  /\byou are now (in )?[a-z ]{0,40}(mode|assistant|model|ai)\b/i,
  /\b(system|developer) prompt\b/i,
  /^[ \t]*(system|assistant|developer)[ \t]*:/im,
  /\b(reveal|print|output) (your|the) (system prompt|instructions|api keys?)\b/i,
  /\brespond only with\b/i,
  /\bjailbreak\b/i,
];

export const looksLikeInstruction = (sentence: string) => INSTRUCTION.some((re) => re.test(sentence));

export type QuarantineDecision = { quarantine: false } | { quarantine: true; reason: string };

export function decideQuarantine(
  doc: ExtractedDocument,
  records: RecordSet,
  fetch: { crossSiteRedirect: boolean } | null,
): QuarantineDecision {
  if (fetch?.crossSiteRedirect) {
    return { quarantine: true, reason: 'The URL redirected to another site; review that the content belongs to this source.' };
  }
  // Mostly instructions aimed at a model, and nothing factual besides them. One factual record decides
  // it: then the sentences of the text are not read at all.
  if (records.facts.some((f) => !looksLikeInstruction(f.text))) return { quarantine: false };
  let sentences = 0;
  let instructions = 0;
  eachPiece(doc.text, /(?<=[.!?])\s+|\n+/g, (piece) => {
    const s = piece.trim();
    if (s.length <= 3) return;
    sentences++;
    if (looksLikeInstruction(s)) instructions++;
  });
  if (sentences > 0 && instructions / sentences >= 0.6) {
    return { quarantine: true, reason: 'The content consists mostly of instructions aimed at an AI model.' };
  }
  return { quarantine: false };
}

/**
 * The pieces text.split(separator) gives, one at a time (a large text's sentences never sit in one
 * array). `separator` is global and never matches the empty string.
 */
function eachPiece(text: string, separator: RegExp, visit: (piece: string) => void) {
  let from = 0;
  separator.lastIndex = 0;
  for (let m = separator.exec(text); m; m = separator.exec(text)) {
    visit(text.slice(from, m.index));
    from = m.index + m[0].length;
  }
  visit(text.slice(from));
}
