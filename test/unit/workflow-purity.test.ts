import path from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const eslint = new ESLint({ cwd: path.resolve('.') });

async function ruleIds(code: string, file = 'workflows/probe.workflow.ts'): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.resolve(file) });
  return result!.messages.map((m) => m.ruleId ?? m.message);
}

describe('workflow purity lint rule', () => {
  it.each([
    ["import fs from 'node:fs'; export const x = fs;"],
    ["import pg from 'pg'; export const x = pg;"],
    ["import { createOrm } from '../platform/db/orm.ts'; export const x = createOrm;"],
    ["import { createActivities } from '../activities/index.ts'; export const x = createActivities;"],
    ["import { Client } from '@temporalio/client'; export const x = Client;"],
  ])('rejects %s', async (code) => {
    expect(await ruleIds(code)).toContain('@typescript-eslint/no-restricted-imports');
  });

  it('rejects timers and fetch in workflow code', async () => {
    expect(await ruleIds('export function w() { setTimeout(() => {}, 1); return fetch("x"); }')).toEqual([
      'no-restricted-globals',
      'no-restricted-globals',
    ]);
  });

  it('allows type-only activity imports and the workflow API', async () => {
    const code =
      "import { proxyActivities } from '@temporalio/workflow';\n" +
      "import type { Activities } from '../activities/index.ts';\n" +
      "export const a = proxyActivities<Activities>({ startToCloseTimeout: '1s' });\n";
    expect(await ruleIds(code)).toEqual([]);
  });

  it('does not apply outside workflows/', async () => {
    expect(await ruleIds("import fs from 'node:fs'; export const x = fs;", 'platform/probe.ts')).toEqual([]);
  });
});
