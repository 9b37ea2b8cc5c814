import { describe, expect, it } from 'vitest';
import { dispatch, type CommandSpec } from '../../cli/lib/dispatch.ts';
import { renderQueryResult } from '../../cli/cairn/commands/query.ts';
import { findObjects, renderPage, table, tree } from '../../cli/cairn/output.ts';

const cmd = (name: string, positionals?: string[]): CommandSpec => ({
  name, summary: `${name} summary`, usage: `x ${name}${positionals ? ` ${positionals.join(' ')}` : ''}`, options: { json: { type: 'boolean' } }, positionals,
});
const commands = [cmd('jobs'), cmd('jobs show', ['ID']), cmd('keys list'), cmd('query', ['TEXT?'])];

describe('dispatch', () => {
  it('picks the longest matching name and parses declared positionals and flags', () => {
    const r = dispatch('x', commands, ['jobs', 'show', 'abc', '--json']);
    expect(r).toMatchObject({ kind: 'run', command: { name: 'jobs show' }, args: { positionals: ['abc'], values: { json: true } } });
    expect(dispatch('x', commands, ['jobs'])).toMatchObject({ kind: 'run', command: { name: 'jobs' } });
    expect(dispatch('x', commands, ['query'])).toMatchObject({ kind: 'run', args: { positionals: [] } });
  });

  it('refuses missing, extra and undeclared positionals and unknown flags', () => {
    expect(dispatch('x', commands, ['jobs', 'show'])).toMatchObject({ kind: 'usage', message: expect.stringContaining('missing ID') });
    expect(dispatch('x', commands, ['jobs', 'show', 'a', 'b'])).toMatchObject({ kind: 'usage', message: expect.stringContaining('unexpected argument: b') });
    expect(dispatch('x', commands, ['jobs', 'extra']).kind).toBe('usage');
    expect(dispatch('x', commands, ['jobs', '--nope']).kind).toBe('usage');
  });

  it('help: everything, a group, one command', () => {
    expect(dispatch('x', commands, []).kind).toBe('help');
    const group = dispatch('x', commands, ['keys']);
    expect(group).toMatchObject({ kind: 'help', message: expect.stringContaining('x keys list') });
    expect(group.kind === 'help' && group.message.includes('x jobs')).toBe(false);
    expect(dispatch('x', commands, ['jobs', 'show', '--help'])).toEqual({ kind: 'help', message: 'usage: x jobs show ID\n\njobs show summary' });
    expect(dispatch('x', commands, ['nothing']).kind).toBe('usage');
  });
});

describe('output', () => {
  it('tree renders any JSON as indented key: value text', () => {
    expect(tree({ id: 'c1', content: 'Lives in Lisbon', tags: ['a', 'b'], none: [], when: null, nested: { x: 1, list: [{ k: 1, j: 2 }, { k: 3 }] } })).toBe(
      ['id: c1', 'content: Lives in Lisbon', 'tags: a, b', 'none: (none)', 'when: -', 'nested:', '  x: 1', '  list:', '    - k: 1', '      j: 2', '    - k: 3'].join('\n'),
    );
    expect(tree({ text: 'two\nlines' })).toBe('text:\n  two\n  lines');
  });

  it('renderPage lists the first array field as blocks, then the other fields', () => {
    const page = { schemaVersion: 'v', items: [{ id: 'p1' }, { id: 'p2' }], next_cursor: null };
    expect(renderPage(page, 'empty')).toBe('id: p1\n\nid: p2\n\nnext_cursor: -');
    expect(renderPage({ items: [] }, 'empty')).toBe('empty');
  });

  it('findObjects finds claim-like objects at any depth, outermost first', () => {
    const body = { page: { items: [{ id: 'a', head_revision: 'r1', inner: { head_revision: 'x' } }, { id: 'b', head_revision: 'r2' }] } };
    expect(findObjects(body, 'head_revision').map((o) => o.id)).toEqual(['a', 'b']);
  });

  it('table pads columns', () => {
    expect(table(['A', 'BB'], [['xxx', null], ['y', ['p', 'q']]])).toBe('A    BB\nxxx  -\ny    p,q');
  });
});

describe('query result rendering', () => {
  const result = {
    schemaVersion: 'service-query-result-v1', mode: 'answer', execution: 'ready', resolvedPreset: 'accuracy',
    coverage: { status: 'partial', returned: 2 }, stopReason: 'evidence_limit',
    answer: {
      disposition: 'partial', text: 'alice lives in Porto. alice lives in Madrid now. Note: …', answerer: 'builtin-extractive',
      sentences: [
        { text: 'alice lives in Porto.', citations: ['cit_p'] },
        { text: 'alice lives in Madrid now.', citations: ['cit_m'] },
        { text: 'Note: memory holds conflicting statements about this.', citations: ['cit_p', 'cit_m'], note: 'conflict' },
      ],
    },
    context: { text: 'Retrieved context.\n\n[cit_p] (claim about peer alice)\nalice lives in Porto.', fragments: [{ text: 'alice lives in Porto.' }], truncated: false, maxChars: 8000 },
    evidence: [
      { citationHandle: 'cit_p', kind: 'claim', text: 'alice lives in Porto.', rank: 1, origin: { type: 'claim', peer: 'alice', authority: 'inferred_memory', validFrom: '2026-11-20T10:00:00.000Z' } },
      { citationHandle: 'cit_m', kind: 'message', text: 'I live in\nMadrid now.', rank: 2, origin: { type: 'message', peer: 'alice', session: 's1', role: 'user', createdAt: '2026-11-21T10:00:00.000Z' } },
    ],
    citations: [{ citationHandle: 'cit_p', kind: 'claim', label: 'claim about peer alice', usedBy: 'answer' }],
    limitations: [{ code: 'conflicting_evidence', message: 'Evidence disagrees; see conflicts.' }],
    gaps: [{ code: 'unmatched_terms', message: 'Some query terms matched no evidence.', terms: ['gales'] }],
    conflicts: [{ topic: 'peer alice: home', citationHandles: ['cit_p', 'cit_m'], statements: ['alice lives in Porto.', 'alice lives in Madrid now.'] }],
  };
  const headers = new Headers({ 'x-service-credit-cost': '1', 'x-service-credit-remaining': '99' });

  it('answer mode: the answer with evidence numbers, the evidence once, conflicts by number, notes and credits', () => {
    expect(renderQueryResult(result, headers)).toBe([
      'mode answer · execution ready · preset accuracy · coverage partial · stop reason evidence_limit',
      '',
      'Answer (partial):\n  alice lives in Porto. [1]\n  alice lives in Madrid now. [2]\n  Note: memory holds conflicting statements about this. [1][2]',
      '',
      'Evidence:\n  [1] cit_p  claim · claim about alice, valid from 2026-11-20\n      alice lives in Porto.'
        + '\n  [2] cit_m  message · message from alice in session s1 (user, 2026-11-21)\n      I live in Madrid now.',
      '',
      'Conflicts (memory and sources disagree; none is confirmed):\n  peer alice: home\n    [1] alice lives in Porto.\n    [2] alice lives in Madrid now.',
      '',
      'Gaps:\n  unmatched_terms: Some query terms matched no evidence. (gales)',
      '',
      'Limitations:\n  conflicting_evidence: Evidence disagrees; see conflicts.',
      '',
      'Credits: 1 spent, 99 remaining.',
    ].join('\n'));
  });

  it('context mode prints the context text once, not the fragments or the evidence again', () => {
    const text = renderQueryResult({ ...result, mode: 'context', answer: null, conflicts: [], limitations: [], gaps: [] }, headers);
    expect(text).toBe([
      'mode context · execution ready · preset accuracy · coverage partial · stop reason evidence_limit',
      '',
      'Context (74 of 8000 characters):\n  Retrieved context.\n\n  [cit_p] (claim about peer alice)\n  alice lives in Porto.',
      '',
      'Credits: 1 spent, 99 remaining.',
    ].join('\n'));
    expect(text.match(/alice lives in Porto/g)).toHaveLength(1);
  });
});
