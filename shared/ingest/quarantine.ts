import type { ExtractedDocument } from './extract/index.ts';
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
  // Mostly instructions aimed at a model, and nothing factual besides them.
  const sentences = doc.text.split(/(?<=[.!?])\s+|\n+/).map((s) => s.trim()).filter((s) => s.length > 3);
  const instructions = sentences.filter(looksLikeInstruction).length;
  const factual = records.facts.filter((f) => !looksLikeInstruction(f.text)).length;
  if (sentences.length > 0 && instructions / sentences.length >= 0.6 && factual === 0) {
    return { quarantine: true, reason: 'The content consists mostly of instructions aimed at an AI model.' };
  }
  return { quarantine: false };
}
