import { describe, expect, it } from 'vitest';
import { builtinAnswer, extractiveAnswer } from '../../core/answer/extractive.ts';

// The built-in answerer (no model): answers when a retrieved sentence states the answer, and says which
// part of the question no evidence covers when none does.

const ev = (n: number, text: string, label = 'Skerrow notes') => ({ citationHandle: `cit_${n}`, text, label });

// Evidence as retrieval ranks it for "Who keeps the lighthouse?": the sentence that answers is fifth,
// and says "kept", not "keeps".
const lighthouse = [
  ev(1, 'The Skerrow lighthouse was first lit in 1851. Its lamp turns every twelve seconds.'),
  ev(2, 'Keepers log the weather at the lighthouse every four hours.'),
  ev(3, 'The lighthouse stands on a basalt cape, 47 metres above the sea.'),
  ev(4, 'Supply boats reach the cape twice a month in winter.'),
  ev(5, 'Maria Okafor has kept the lighthouse since 1998, and she knows every storm by name.'),
];

describe('built-in answerer', () => {
  it('answers "who" with the name from the sentence that names the keeper, though it says "kept"', () => {
    const r = builtinAnswer('Who keeps the lighthouse?', lighthouse);
    expect(r.sentences).toEqual([{ text: 'Maria Okafor', citations: ['cit_5'] }]);
    expect(r.why).toBeNull();
  });

  it('answers "when" only from a sentence with a time, "how many" only from one with a number, with that part of it', () => {
    expect(extractiveAnswer('When was the Skerrow lighthouse first lit?', lighthouse)).toEqual([{ text: 'in 1851', citations: ['cit_1'] }]);
    expect(extractiveAnswer('How many metres above the sea is the lighthouse?', lighthouse)).toEqual([{ text: '47 metres', citations: ['cit_3'] }]);
    // A claim's resolved date is preferred to the relative time of the message it came from.
    const chat = [
      ev(1, 'I ran my first half marathon yesterday!', 'message from peer Kate in session s1'),
      ev(2, 'Kate ran their first half marathon yesterday (11 January 2024).', 'claim about peer Kate'),
    ];
    expect(extractiveAnswer('When did Kate run her first half marathon?', chat)).toEqual([{ text: '11 January 2024', citations: ['cit_2'] }]);
  });

  it('counts the label of a message (its peer) as part of what the sentence is about, and answers with the clause that answers', () => {
    const chat = [
      ev(1, 'I adopted a beagle called Pixel last spring - best decision ever.', 'message from peer Kate in session s1'),
      ev(2, 'Pixel is so cute!', 'message from peer Ana in session s1'),
    ];
    expect(extractiveAnswer('What dog did Kate adopt?', chat)).toEqual([{ text: 'I adopted a beagle called Pixel last spring', citations: ['cit_1'] }]);
  });

  it('never answers with a question found in the evidence', () => {
    expect(extractiveAnswer('What books does Kate like?', [ev(1, 'What books does Kate like these days?')])).toEqual([]);
  });

  it('says which words of the question no evidence mentions', () => {
    const r = builtinAnswer('Who painted the lighthouse ceiling?', lighthouse);
    expect(r.sentences).toEqual([]);
    expect(r.why).toEqual({ message: expect.stringContaining('"painted", "ceiling"'), terms: ['painted', 'ceiling'] });
  });

  it('says what no sentence states when every word is covered but the answer is not', () => {
    const r = builtinAnswer('When did the supply boats reach the cape?', [ev(1, 'Supply boats reach the cape by the northern channel.')]);
    expect(r.sentences).toEqual([]);
    expect(r.why?.message).toMatch(/no sentence about them states when/);
  });

  it('does not answer from a sentence that only repeats the question', () => {
    expect(extractiveAnswer('What is the lighthouse?', [ev(1, 'The lighthouse.')])).toEqual([]);
  });
});
