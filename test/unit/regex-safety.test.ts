import { readFileSync } from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { check } from 'recheck';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { ANSWER_PATTERNS } from '../../core/answer/extractive.ts';
import { CLAUSE_PATTERNS, RULE_PATTERNS } from '../../core/memory/deriver.ts';
import { WHEN_PATTERN } from '../../core/memory/when.ts';
import { SCREEN_PATTERNS } from '../../core/memory/screen.ts';

// Every regular expression of the server's code runs in linear time (issue 24): recheck, a maintained
// ReDoS checker that finds polynomial (quadratic, cubic) as well as exponential backtracking, checks
// each one. The server sees user text nearly everywhere (documents, messages, queries, headers), so
// the check covers all of it rather than a hand-kept list: a new pattern cannot slip in unchecked.

const ROOT = path.resolve(import.meta.dirname, '../..');
/** The server's code: what runs in the API, the worker and the extraction processes. */
const SCOPE = ['core', 'platform', 'temporal', 'runners', 'api', 'activities', 'workflows'];
/** Browser code (the console) never runs on the server. */
const OUTSIDE = ['api/console/src/'];

/** Patterns built at run time, with where the test finds them (a module exporting them). */
const DYNAMIC: Record<string, RegExp[]> = {
  'core/memory/deriver.ts': [...RULE_PATTERNS, ...CLAUSE_PATTERNS],
  'core/memory/when.ts': [WHEN_PATTERN],
  'core/answer/extractive.ts': ANSWER_PATTERNS,
  'core/memory/screen.ts': SCREEN_PATTERNS,
};

type Found = { where: string; source: string; flags: string };

function serverFiles(): string[] {
  const out = execFileSync('git', ['ls-files', ...SCOPE.map((d) => `${d}/*.ts`)], { cwd: ROOT, encoding: 'utf8' });
  return out.split('\n').filter((f) => f && !OUTSIDE.some((o) => f.startsWith(o)));
}

function scan(): { literals: Found[]; constructed: string[] } {
  const literals: Found[] = [];
  const constructed: string[] = [];
  for (const file of serverFiles()) {
    const src = ts.createSourceFile(file, readFileSync(path.join(ROOT, file), 'utf8'), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      const where = `${file}:${src.getLineAndCharacterOfPosition(node.getStart()).line + 1}`;
      if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) {
        const text = node.getText();
        const slash = text.lastIndexOf('/');
        literals.push({ where, source: text.slice(1, slash), flags: text.slice(slash + 1) });
      } else if ((ts.isNewExpression(node) || ts.isCallExpression(node)) && node.expression.getText() === 'RegExp') {
        constructed.push(where);
      }
      ts.forEachChild(node, visit);
    };
    visit(src);
  }
  return { literals, constructed };
}

describe('regular expressions of the server', () => {
  const { literals, constructed } = scan();

  it('builds patterns at run time only where this test can check them', () => {
    expect(literals.length).toBeGreaterThan(100);
    const unchecked = constructed.filter((where) => !(where.split(':')[0]! in DYNAMIC));
    expect(unchecked, 'build the pattern from a literal, or export it and add the module to DYNAMIC').toEqual([]);
  });

  it('all run in linear time (recheck finds no polynomial or exponential backtracking)', async () => {
    const all: Found[] = [
      ...literals,
      ...Object.entries(DYNAMIC).flatMap(([file, res]) => res.map((re, i) => ({ where: `${file} (pattern ${i})`, source: re.source, flags: re.flags }))),
    ];
    // One at a time: the checker's time limit is per pattern, and patterns queued behind others would
    // run out of it.
    const verdicts = [];
    for (const r of all) {
      // No time limits inside the fuzzer (it counts steps): the verdict must not depend on the load.
      const d = await check(r.source, r.flags, { timeout: 60_000, incubationTimeout: null, attackTimeout: null });
      verdicts.push({ ...r, status: d.status, complexity: d.status === 'vulnerable' ? `${d.complexity.type} ${d.complexity.summary}` : '' });
    }
    const unsafe = verdicts.filter((v) => v.status !== 'safe').map((v) => `${v.where} /${v.source}/${v.flags}: ${v.status} ${v.complexity}`);
    expect(unsafe, unsafe.join('\n')).toEqual([]);
  }, 300_000);
});
