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
  it('shows the answer, context, evidence and citations with their handles, whatever other fields they carry', () => {
    const result = {
      schemaVersion: 'service-query-result-v1', mode: 'answer', execution: 'ready', resolvedPreset: 'accuracy',
      coverage: { status: 'partial', returned: 1 }, stopReason: 'evidence_limit',
      answer: { disposition: 'partial', text: 'About 47 storms a year [cit_a1].', answerer: 'builtin-extractive' },
      context: { text: '[cit_a1] The keeper logs 47 storms a year.', fragments: [], truncated: false },
      evidence: [{ citationHandle: 'cit_a1', kind: 'excerpt', text: 'The keeper logs\n47 storms a year.', rank: 1 }],
      citations: [{ citationHandle: 'cit_a1', kind: 'excerpt', label: 'Skerrow Point notes', usedBy: 'answer' }],
      limitations: [], gaps: [{ code: 'term_unmatched', message: 'No evidence for "gales".' }], conflicts: [],
    };
    const text = renderQueryResult(result, new Headers({ 'x-service-credit-cost': '1', 'x-service-credit-remaining': '99' }));
    expect(text).toBe([
      'mode answer · execution ready · preset accuracy · coverage partial · stop reason evidence_limit',
      '',
      'Answer (partial):\n  About 47 storms a year [cit_a1].\n  answerer: builtin-extractive',
      '',
      'Context:\n  [cit_a1] The keeper logs 47 storms a year.',
      '',
      'Context details:\n  truncated: false',
      '',
      'Evidence:\n  [1] cit_a1  The keeper logs 47 storms a year.\n        kind: excerpt\n        rank: 1',
      '',
      'Citations:\n  [1] cit_a1  Skerrow Point notes\n        kind: excerpt\n        usedBy: answer',
      '',
      'Gaps:\n  [1]  No evidence for "gales".\n        code: term_unmatched',
      '',
      'Credits: 1 spent, 99 remaining.',
    ].join('\n'));
  });
});
