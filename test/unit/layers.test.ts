import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
type Layer = { folder: string; may: string[]; says: string };
// The table lives in eslint.config.js (plain JavaScript, so read untyped).
const { LAYERS } = (await import(pathToFileURL(path.join(ROOT, 'eslint.config.js')).href)) as { LAYERS: Layer[] };
const TOP = ['bin', 'cli', 'api', 'runners', 'temporal', 'workflows', 'activities', 'core', 'platform', 'packages'];
const eslint = new ESLint({ cwd: ROOT });

async function restricted(file: string, specifier: string): Promise<boolean> {
  const code = `import { x } from '${specifier}';\nexport const y = x;\n`;
  const [result] = await eslint.lintText(code, { filePath: path.join(ROOT, file) });
  return result!.messages.some((m) => m.ruleId === '@typescript-eslint/no-restricted-imports');
}

/** A probe file in a row's folder and the specifier from it to a file in `target`. */
function probe(folder: string, target: string) {
  const file = `${folder}/layer-probe/probe.ts`;
  const up = '../'.repeat(file.split('/').length - 1);
  return { file, specifier: `${up}${target}/x.ts` };
}

describe('the layers (eslint.config.js LAYERS, docs/architecture.md "Layers")', () => {
  it.each(LAYERS.map((row) => [row.folder, row] as const))('%s imports only what its row names', async (_name, row) => {
    const own = row.folder.split('/')[0]!;
    for (const top of TOP.filter((t) => t !== own)) {
      const { file, specifier } = probe(row.folder, top);
      const allowed = row.may.includes(top);
      expect({ top, restricted: await restricted(file, specifier) }).toEqual({ top, restricted: !allowed });
    }
    for (const opened of row.may.filter((m) => m.includes('/'))) {
      const { file, specifier } = probe(row.folder, opened);
      expect({ opened, restricted: await restricted(file, specifier) }).toEqual({ opened, restricted: false });
    }
  });

  it('MCP code does not import REST routes', async () => {
    expect(await restricted('api/mcp/tools/probe.ts', '../../routes/query/index.ts')).toBe(true);
    expect(await restricted('api/probe.ts', './routes/query/index.ts')).toBe(false);
  });

  it('docs/architecture.md shows the same table', () => {
    const doc = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Layers'));
    const rows = [...section.matchAll(/^\| `([^`]+)` \| (.*?) \| (.*?) \|$/gm)].map((m) => ({
      folder: m[1],
      may: m[2] === '(nothing)' ? [] : m[2]!.split(', ').map((s) => s.replace(/`/g, '')),
      says: m[3],
    }));
    expect(rows).toEqual(LAYERS);
  });

  it('no folder imports a folder that imports it back (no cycle between folders)', () => {
    const edges = folderEdges();
    const cycle = findCycle(edges);
    expect(cycle).toEqual([]);
  });
});

const SPECIFIER = /(?:from\s+|import\s*\(\s*|import\s+)['"](\.{1,2}\/[^'"]+)['"]/g;

function sourceFiles(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith('.ts') && !e.parentPath.includes('dist'))
    .map((e) => path.relative(ROOT, path.join(e.parentPath, e.name)));
}

/** Folder -> the folders its files import (static and dynamic imports, type imports included). */
function folderEdges(): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const file of TOP.flatMap(sourceFiles)) {
    for (const m of readFileSync(path.join(ROOT, file), 'utf8').matchAll(SPECIFIER)) {
      const from = path.dirname(file);
      const to = path.dirname(path.normalize(path.join(from, m[1]!)));
      if (from === to) continue;
      if (!edges.has(from)) edges.set(from, new Set());
      edges.get(from)!.add(to);
    }
  }
  return edges;
}

/** One cycle of folders, or [] (depth-first search with colours). */
function findCycle(edges: Map<string, Set<string>>): string[] {
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (node: string): string[] => {
    state.set(node, 'open');
    stack.push(node);
    for (const next of edges.get(node) ?? []) {
      if (state.get(next) === 'open') return [...stack.slice(stack.indexOf(next)), next];
      if (!state.has(next)) {
        const found = visit(next);
        if (found.length) return found;
      }
    }
    stack.pop();
    state.set(node, 'done');
    return [];
  };
  for (const node of edges.keys()) {
    if (!state.has(node)) {
      const found = visit(node);
      if (found.length) return found;
    }
  }
  return [];
}
