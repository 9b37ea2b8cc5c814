// Runs before `npm start` and `npm test` (the prestart and pretest scripts), so those two commands
// work on a fresh clone: it installs the dependencies (npm ci) when node_modules is missing or does not
// match package-lock.json. On a fresh clone this runs on the machine's own Node (20 here): the
// project's Node 24 is itself a dependency. So this file is plain JavaScript for any Node >= 18,
// with no dependency and no TypeScript.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/**
 * Why node_modules does not match the lockfile, or null when it does. npm records what it installed
 * in node_modules/.package-lock.json: every package the lockfile lists must be there at the same
 * version and integrity (optional ones, such as other platforms' binaries, may be missing), and
 * nothing else.
 */
export function installProblem(dir = root) {
  const hiddenFile = path.join(dir, 'node_modules', '.package-lock.json');
  if (!existsSync(hiddenFile)) return 'node_modules is missing';
  const wanted = JSON.parse(readFileSync(path.join(dir, 'package-lock.json'), 'utf8')).packages ?? {};
  const installed = JSON.parse(readFileSync(hiddenFile, 'utf8')).packages ?? {};
  for (const [name, want] of Object.entries(wanted)) {
    if (name === '') continue;
    const have = installed[name];
    if (!have) {
      if (want.optional) continue;
      return `${name} is not installed`;
    }
    if (have.version !== want.version) return `${name} is ${have.version}, the lockfile says ${want.version}`;
    if (want.integrity && have.integrity !== want.integrity) return `${name} ${have.version} is not the build the lockfile names`;
  }
  const extra = Object.keys(installed).find((name) => !(name in wanted));
  return extra ? `${extra} is installed but not in the lockfile` : null;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problem = installProblem();
  if (problem) {
    process.stdout.write(`[cairn] installing dependencies with npm ci (${problem})...\n`);
    // The npm that runs this script, on the Node it runs on (not one inside node_modules, which npm ci replaces).
    const [command, args] = process.env.npm_execpath
      ? [process.env.npm_node_execpath ?? process.execPath, [process.env.npm_execpath]]
      : ['npm', []];
    const result = spawnSync(command, [...args, 'ci', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
    if (result.status !== 0) {
      process.stderr.write(`[cairn] npm ci failed (${result.error?.message ?? `exit ${result.status}`}): fix the problem above and run the command again.\n`);
      process.exit(1);
    }
  }
}
