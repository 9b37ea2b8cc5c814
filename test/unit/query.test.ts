import { randomBytes, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { extractiveAnswer } from '../../core/answer/extractive.ts';
import { citedSentences } from '../../core/answer/provider.ts';
import { isSupported } from '../../core/answer/support.ts';
import { ConfigError, loadConfig } from '../../platform/config.ts';
import { QueryRequest } from '../../core/contracts/query.ts';
import { findConflicts } from '../../core/query/result.ts';
import { requestHash } from '../../core/idempotency.ts';
import { openCitation, sealCitation } from '../../core/retrieval/citations.ts';
import { idf, termScore } from '../../core/retrieval/bm25.ts';
import { parseTsVector } from '../../core/retrieval/text.ts';

describe('citation handles', () => {
  const key = randomBytes(32);
  const account = randomUUID();
  const ref = { table: 'record' as const, id: randomUUID() };

  it('open only for the account they were sealed for, are stable, and reveal no id', () => {
    const h = sealCitation(key, account, ref);
    expect(h).toMatch(/^cit_[A-Za-z0-9_-]{60}$/);
    expect(sealCitation(key, account, ref)).toBe(h);
    // The same key read again (another Buffer, as in another process) seals and opens the same handle.
    expect(sealCitation(Buffer.from(key), account, ref)).toBe(h);
    expect(openCitation(Buffer.from(key), account, h)).toEqual(ref);
    expect(h).not.toContain(ref.id.replace(/-/g, '').slice(0, 8));
    expect(openCitation(key, account, h)).toEqual(ref);
    expect(openCitation(key, randomUUID(), h)).toBeNull();
    expect(openCitation(randomBytes(32), account, h)).toBeNull();
    const flipped = h.slice(0, 10) + (h[10] === 'A' ? 'B' : 'A') + h.slice(11);
    expect(openCitation(key, account, flipped)).toBeNull();
    expect(openCitation(key, account, 'cit_short')).toBeNull();
  });

  it('a handle sealed again (kept from before) is the one for that key, account and row only', () => {
    const h = sealCitation(key, account, ref);
    const other = randomBytes(32);
    expect(openCitation(other, account, sealCitation(other, account, ref))).toEqual(ref);
    expect(sealCitation(other, account, ref)).not.toBe(h);
    const elsewhere = randomUUID();
    expect(openCitation(key, elsewhere, sealCitation(key, elsewhere, ref))).toEqual(ref);
    const claim = { table: 'claim' as const, id: ref.id };
    expect(openCitation(key, account, sealCitation(key, account, claim))).toEqual(claim);
    expect(sealCitation(key, account, ref)).toBe(h);
  });
});

describe('request rules', () => {
  it('query may be omitted only for scoped context or citation lookup', () => {
    const base = { idempotencyKey: 'k'.repeat(8) };
    expect(QueryRequest.safeParse({ ...base, mode: 'context', peer_ids: ['p'] }).success).toBe(true);
    expect(QueryRequest.safeParse({ ...base, mode: 'evidence', citationHandle: `cit_${'a'.repeat(20)}` }).success).toBe(true);
    expect(QueryRequest.safeParse({ ...base, mode: 'evidence', peer_ids: ['p'] }).success).toBe(false);
    expect(QueryRequest.safeParse({ ...base, mode: 'evidence', query: '   ' }).success).toBe(false);
  });

  it('hashes requests independently of key order and undefined fields', () => {
    expect(requestHash({ a: 1, b: [1, 2], c: undefined })).toBe(requestHash({ b: [1, 2], a: 1 }));
    expect(requestHash({ a: 1 })).not.toBe(requestHash({ a: 2 }));
  });
});

describe('ranking', () => {
  it('BM25: rarer terms weigh more, frequency saturates, longer documents of a kind score less', () => {
    expect(idf(1000, 5)).toBeGreaterThan(idf(1000, 500));
    expect(idf(1000, 1000)).toBeGreaterThan(0);
    const w = idf(1000, 10);
    expect(termScore(w, 2, 10, 10)).toBeGreaterThan(termScore(w, 1, 10, 10));
    expect(termScore(w, 20, 10, 10) / termScore(w, 10, 10, 10)).toBeLessThan(1.1);
    expect(termScore(w, 1, 40, 10)).toBeLessThan(termScore(w, 1, 10, 10));
  });

  it('reads the tsvector text form: doubled quotes, weights, lexemes without positions', () => {
    const v = parseTsVector("'it''s':1A,12 'a b':3B 'bare' '''':4,5C,6");
    expect([...v.positions]).toEqual([["it's", [1, 12]], ['a b', [3]], ['bare', []], ["'", [4, 5, 6]]]);
    expect(v.length).toBe(7);
    expect(parseTsVector(null)).toEqual({ positions: new Map(), length: 0 });
    expect(parseTsVector("'unterminated:1").positions.size).toBe(0);
  });
});

describe('answers and validation', () => {
  const ev = [{ citationHandle: 'cit_a', label: 'doc', text: 'Project Wren was founded in 1987. The launch codename of project Wren is quasar12.' }];

  it('the extractive answerer quotes and cites only supporting sentences', () => {
    expect(extractiveAnswer('What is the launch codename of project Wren?', ev)).toEqual([
      { text: 'The launch codename of project Wren is quasar12.', citations: ['cit_a'] },
    ]);
    expect(extractiveAnswer('Who painted the ceiling?', ev)).toEqual([]);
  });

  it('support needs the cited words and every number', () => {
    expect(isSupported('The launch codename of project Wren is quasar12.', [ev[0]!.text])).toBe(true);
    expect(isSupported('The launch codename of project Wren is quasar13.', [ev[0]!.text])).toBe(false);
    expect(isSupported('Project Wren has a large budget and many volunteers.', [ev[0]!.text])).toBe(false);
  });

  it('provider sentences keep their markers, including markers after the full stop', () => {
    expect(citedSentences('First claim [cit_aaaaaaaaaaaaaaaa]. Second claim. [cit_bbbbbbbbbbbbbbbb] Third.')).toEqual([
      { text: 'First claim.', citations: ['cit_aaaaaaaaaaaaaaaa'] },
      { text: 'Second claim.', citations: ['cit_bbbbbbbbbbbbbbbb'] },
      { text: 'Third.', citations: [] },
    ]);
  });

  it('finds "X is Y" statements that disagree', () => {
    const mk = (h: string, text: string) => ({ citationHandle: h, kind: 'fact' as const, text, score: 1, rank: 1, label: 'x', origin: {} as never });
    const c = findConflicts([mk('cit_1', 'The harbour code of project Wren is red.'), mk('cit_2', 'The harbour code of project Wren is blue.'), mk('cit_3', 'The vault of project Wren is old.')]);
    expect(c).toEqual([{ topic: expect.any(String), citationHandles: ['cit_1', 'cit_2'], statements: expect.any(Array) }]);
  });
});

describe('answer provider configuration', () => {
  it('openai needs a URL and a model; the default is the built-in answerer', () => {
    expect(loadConfig({}).query.answer).toEqual({ mode: 'builtin' });
    expect(() => loadConfig({ ANSWER_PROVIDER: 'openai', ANSWER_PROVIDER_MODEL: 'm' })).toThrow(ConfigError);
    expect(() => loadConfig({ ANSWER_PROVIDER: 'openai', ANSWER_PROVIDER_URL: 'http://127.0.0.1:1/v1' })).toThrow(/ANSWER_PROVIDER_MODEL/);
    expect(loadConfig({ ANSWER_PROVIDER: 'openai', ANSWER_PROVIDER_URL: 'http://127.0.0.1:1/v1', ANSWER_PROVIDER_MODEL: 'm' }).query.answer)
      .toMatchObject({ mode: 'openai', model: 'm', maxCredits: 2, tokensPerCredit: 2000, timeoutMs: 30_000 });
  });
});
