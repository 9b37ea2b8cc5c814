import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { renderConfigurationDoc } from '../../platform/config-doc.ts';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** README.md and every Markdown file under docs/, as paths relative to the repository root. */
function markdownFiles(): string[] {
  const docs = readdirSync(path.join(root, 'docs'), { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith('.md'))
    .map((f) => path.join('docs', f));
  return ['README.md', ...docs];
}

describe('docs/configuration.md', () => {
  it('is what the settings schema renders (regenerate it with `npm run docs:config`)', () => {
    expect(readFileSync(path.join(root, 'docs/configuration.md'), 'utf8')).toBe(renderConfigurationDoc());
  });
});

describe('relative links in README.md and docs/', () => {
  it('point at files that exist', () => {
    const broken: string[] = [];
    for (const file of markdownFiles()) {
      const text = readFileSync(path.join(root, file), 'utf8').replace(/```[\s\S]*?```/g, '');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!) || target!.startsWith('#')) continue;
        const resolved = path.join(root, path.dirname(file), decodeURIComponent(target!.split('#')[0]!));
        if (!existsSync(resolved)) broken.push(`${file}: ${target}`);
      }
    }
    expect(broken).toEqual([]);
  });
});
