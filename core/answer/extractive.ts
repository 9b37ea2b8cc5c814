import { sentenceSpans } from '../text/sentences.ts';
import { contentStems } from '../retrieval/text.ts';
import { isSupported } from './support.ts';
import type { AnswerEvidence, AnswerSentence } from './types.ts';

const EVIDENCE_CONSIDERED = 10;
const SENTENCES_CONSIDERED = 400;
const MAX_SENTENCE = 1_000;
/** Share of the question's weighted content words (of those some evidence has) a sentence must hold to state the answer. */
const MIN_COVERAGE = 0.4;
/** How much each place down the evidence list costs a sentence's score. */
const RANK_PRIOR = 0.05;

/**
 * The built-in answerer: extractive, no model. It reads the sentences of the best evidence, weighs the
 * question's content words by how rare they are among those sentences (a name or a rare word counts more
 * than a word every sentence has), and answers with the sentence that holds most of that weight, also
 * counting its evidence's label (the peer a message is from), when the sentence states something the
 * question asks for: a name for "who", a time for "when", a place for "where", a number for "how
 * many", any new content word otherwise. Past tenses count as their verb ("kept" answers "keeps").
 * The answer is the part of that sentence that answers (the date, the number, the name, the clause;
 * focusOf) when it can be told apart, else the sentence.
 * Every sentence is validated against the evidence it cites; it never writes a word that is not in the
 * evidence. When nothing qualifies it says which part of the question no evidence covers.
 */

type Expected = 'person' | 'time' | 'place' | 'number' | 'any';

const IRREGULAR: Record<string, string> = Object.fromEntries(
  ('kept:keep went:go gone:go got:get gotten:get made:make took:take taken:take saw:see seen:see met:meet ran:run bought:buy ' +
    'brought:bring built:build came:come found:find gave:give given:give knew:know known:know left:leave lost:lose paid:pay ' +
    'sold:sell told:tell won:win wrote:write written:write grew:grow grown:grow flew:fly flown:fly drove:drive driven:drive ' +
    'ate:eat eaten:eat spent:spend began:begin begun:begin became:become broke:break broken:break caught:catch chose:choose ' +
    'chosen:choose drank:drink fell:fall felt:feel forgot:forget heard:hear led:lead rode:ride sang:sing sat:sit slept:sleep ' +
    'spoke:speak stood:stand swam:swim taught:teach thought:think threw:throw woke:wake wore:wear held:hold read:read ' +
    'sent:send lent:lend meant:mean dug:dig hung:hang shot:shoot shut:shut struck:strike stuck:stick taught:teach wove:weave')
    .split(' ').map((p) => p.split(':') as [string, string]),
);

/** Content stems of a text, past tenses of irregular verbs taken as their verb. */
function stemsOf(text: string): string[] {
  return contentStems(text.replace(/[\p{L}]+/gu, (w) => IRREGULAR[w.toLowerCase()] ?? w)).filter((s) => s.length > 1);
}

function expectedOf(question: string): Expected {
  const q = question.toLowerCase();
  if (/\b(how (many|much|old|long|often|far)|what (number|percentage|age))\b/.test(q)) return 'number';
  if (/\b(when|what (year|month|day|date|time)|which (year|month|day|date))\b/.test(q)) return 'time';
  if (/\bwhere\b|\bwhich (city|country|town|place)\b/.test(q)) return 'place';
  if (/\b(who|whom|whose)\b/.test(q)) return 'person';
  return 'any';
}

const MONTHS = 'january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec';
const TIME = new RegExp(`\\b(\\d{1,4}|${MONTHS}|monday|tuesday|wednesday|thursday|friday|saturday|sunday|yesterday|today|tonight|tomorrow|weekend|week|month|year|ago|morning|evening|night|spring|summer|autumn|fall|winter|christmas|birthday)\\b`, 'i');
const DATE = new RegExp(`\\b(\\d{1,2} (${MONTHS})|(${MONTHS}) \\d{4}|\\d{4})\\b`, 'i');
const DATE_PHRASE = new RegExp(`\\b(?:\\d{1,2} (?:${MONTHS})(?: \\d{4})?|(?:${MONTHS}) \\d{1,2}(?:, \\d{4})?|(?:${MONTHS}) \\d{4}|(?:in |since )?\\d{4})\\b`, 'i');
const RELATIVE = /\b(?:(?:last|this|next|past) (?:\w+day|week|weekend|month|year|night)|yesterday|today|tonight|tomorrow|\w+ (?:days|weeks|months|years) ago)\b/i;
// A count, not the day or year of a date ("3 turtles", not "10 November" or "2023").
const NUMBER_PHRASE = new RegExp(`\\b(?:\\d{1,3}(?:[.,]\\d+)?|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|once|twice|several)\\b(?! (?:${MONTHS})\\b)(?: (?:or|to) \\w+)?(?: [\\p{L}]+)?`, 'iu');

/** The patterns built at run time, for the unit test that checks every pattern runs in linear time. */
export const ANSWER_PATTERNS: RegExp[] = [TIME, DATE, DATE_PHRASE, NUMBER_PHRASE];

/** Capitalised words of a sentence that are not in the question and not a capitalised common word. */
function newNames(sentence: string, questionWords: Set<string>): string[] {
  return (sentence.match(/\p{Lu}[\p{L}'-]+/gu) ?? []).filter((w) => !questionWords.has(w.toLowerCase()) && contentStems(w).length > 0
    && !/^(I|I'm|I've|I'll|I'd|The|This|That|These|Those|My|Our|Your|It|We|He|She|They|And|But|So|Oh|Yes|No|Hey|Wow|Thanks)$/.test(w));
}

function states(expected: Expected, sentence: string, qWords: Set<string>, qStems: Set<string>): boolean {
  if (expected === 'person') return newNames(sentence, qWords).length > 0;
  if (expected === 'time') return TIME.test(sentence);
  if (expected === 'number') return NUMBER_PHRASE.test(sentence);
  if (expected === 'place') return newNames(sentence, qWords).length > 0 || /\b(in|at|to|from|near)\s+(the\s+)?\p{L}{3,}/u.test(sentence);
  return stemsOf(sentence).some((s) => !qStems.has(s));
}

/**
 * The answering part of a sentence: the date for "when" (a date in words before a relative time),
 * the number with its noun for "how many", the name for "who" and "where", and for other questions the
 * clause (split at commas, dashes, semicolons and "but"/"and") with the question's words and most new
 * ones. Null when the sentence itself is the best answer.
 */
function focusOf(expected: Expected, sentence: string, qWords: Set<string>, qStems: Set<string>): string | null {
  if (expected === 'time') return (/\(([^()]*\d{4})\)/.exec(sentence)?.[1] ?? DATE_PHRASE.exec(sentence)?.[0] ?? RELATIVE.exec(sentence)?.[0]) ?? null;
  if (expected === 'number') return NUMBER_PHRASE.exec(sentence)?.[0] ?? null;
  if (expected === 'person' || expected === 'place') {
    const runs = sentence.match(/\p{Lu}[\p{L}'-]+(?: (?:of |de |van |von )?\p{Lu}[\p{L}'-]+)*/gu) ?? [];
    return runs.find((r) => newNames(r, qWords).length > 0) ?? null;
  }
  const clauses = sentence.split(/[;:–—]| - |, (?:and|but|so|which) | but /).map((c) => c.trim()).filter(Boolean);
  if (clauses.length < 2) return null;
  const score = (c: string) => {
    const st = stemsOf(c);
    const asked = st.filter((x) => qStems.has(x)).length;
    const fresh = st.filter((x) => !qStems.has(x)).length;
    return asked > 0 && fresh > 0 ? asked * 2 + Math.min(fresh, 4) : 0;
  };
  const best = clauses.reduce((a, c) => (score(c) > score(a) ? c : a), clauses[0]!);
  if (score(best) === 0) return null;
  // Without its closing punctuation (a loop: /[,.!]+$/ is quadratic on long runs).
  let end = best.length;
  while (end > 0 && ',.!'.includes(best[end - 1]!)) end--;
  return best.slice(0, end);
}

const ASKED: Record<Expected, string> = { person: 'who', time: 'when', place: 'where', number: 'how many or how much', any: 'the answer' };

export type BuiltinAnswer = { sentences: AnswerSentence[]; why: { message: string; terms: string[] } | null };

/** The answer, or why there is none: the question's words no evidence mentions, or what no sentence states. */
export function builtinAnswer(query: string, evidence: AnswerEvidence[]): BuiltinAnswer {
  const qStems = [...new Set(stemsOf(query))];
  const qStemSet = new Set(qStems);
  const qWords = new Set((query.toLowerCase().match(/\p{L}+/gu) ?? []));
  const expected = expectedOf(query);
  type Sentence = { text: string; stems: Set<string>; e: AnswerEvidence; rank: number; start: number };
  const sentences: Sentence[] = [];
  evidence.slice(0, EVIDENCE_CONSIDERED).forEach((e, rank) => {
    const label = new Set(stemsOf(e.label));
    for (const span of sentenceSpans(e.text, 0, e.text.length, 'bullets')) {
      if (sentences.length >= SENTENCES_CONSIDERED) return;
      const text = e.text.slice(span.start, span.end);
      // A question in the evidence asks, it does not answer.
      if (text.length > MAX_SENTENCE || /\?\s*["')\]]*$/.test(text)) continue;
      sentences.push({ text, stems: new Set([...stemsOf(text), ...label]), e, rank, start: span.start });
    }
  });
  if (qStems.length === 0) return { sentences: [], why: { message: 'The question has no content words to look for.', terms: [] } };
  // Rarer words among the sentences weigh more; a word no sentence has weighs the most.
  const df = new Map(qStems.map((s) => [s, sentences.filter((x) => x.stems.has(s)).length]));
  const weight = new Map(qStems.map((s) => [s, Math.log(1 + (sentences.length + 1) / (1 + df.get(s)!))]));
  const missing = qStems.filter((s) => df.get(s) === 0);
  // Coverage counts the words some evidence has: a word none has (a misspelling, a paraphrase) cannot
  // tell sentences apart, but when most of the question is missing nothing answers it.
  const present = qStems.filter((s) => df.get(s)! > 0);
  const total = present.reduce((a, s) => a + weight.get(s)!, 0);
  const scored = sentences
    .map((x) => {
      const coverage = total ? present.reduce((a, s) => a + (x.stems.has(s) ? weight.get(s)! : 0), 0) / total : 0;
      // For "when", a date in words beats "yesterday": a claim carries the date the message only implies.
      const bonus = expected === 'time' && DATE.test(x.text) ? 0.15 : 0;
      // Retrieval's order breaks near ties: the better-ranked evidence is more likely the one asked about.
      return { ...x, coverage, score: coverage + bonus - RANK_PRIOR * x.rank };
    })
    .sort((a, b) => b.score - a.score || a.rank - b.rank || a.start - b.start);
  const answerable = missing.length <= present.length;
  const answer = answerable
    ? scored.find((x) => x.coverage >= MIN_COVERAGE && states(expected, x.text, qWords, qStemSet) && isSupported(x.text, [x.e.text]))
    : undefined;
  if (answer) {
    // The part of the sentence that answers, when it can be told apart; it is always text of the evidence.
    const focus = focusOf(expected, answer.text, qWords, qStemSet);
    const text = focus && isSupported(focus, [answer.e.text]) ? focus : answer.text;
    return { sentences: [{ text, citations: [answer.e.citationHandle] }], why: null };
  }
  const termsOf = (stems: string[]) => {
    const originals = query.match(/[\p{L}\p{N}'-]+/gu) ?? [];
    return [...new Set(stems.map((s) => originals.find((w) => stemsOf(w)[0] === s) ?? s))];
  };
  if (!sentences.length) return { sentences: [], why: { message: 'There is no evidence to answer from.', terms: [] } };
  if (missing.length && (!answerable || scored[0]!.coverage >= MIN_COVERAGE)) {
    const terms = termsOf(missing);
    return { sentences: [], why: { message: `No retrieved evidence mentions ${terms.map((t) => `"${t}"`).join(', ')}.`, terms } };
  }
  const best = scored[0]!;
  if (best.coverage < MIN_COVERAGE) {
    const terms = termsOf(qStems);
    return { sentences: [], why: { message: `The evidence mentions ${terms.map((t) => `"${t}"`).join(', ')}, but no single sentence connects them.`, terms } };
  }
  const terms = termsOf(qStems.filter((s) => best.stems.has(s)));
  return {
    sentences: [],
    why: { message: `The evidence mentions ${terms.map((t) => `"${t}"`).join(', ')}, but no sentence about them states ${ASKED[expected]}.`, terms },
  };
}

/** The built-in answer's sentences (see builtinAnswer). */
export function extractiveAnswer(query: string, evidence: AnswerEvidence[]): AnswerSentence[] {
  return builtinAnswer(query, evidence).sentences;
}
