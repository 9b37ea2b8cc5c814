// Builds the browser console (api/console/src → api/console/dist) with esbuild: one ES module bundle
// (Preact + htm, no JSX step), one stylesheet and the HTML shell. Fixed file names (served with ETag
// revalidation), no source maps in the served tree, nothing fetched at run time.
//
// `ensureConsoleBuilt()` rebuilds only when the output is missing or older than any source file, the
// lockfile or this script; `npm start` and the test global setup call it, so a fresh clone needs no
// separate build step. Run directly (`npm run console:build`) it always rebuilds.
import { mkdir, readdir, rename, stat, writeFile, copyFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
export const CONSOLE_SRC = path.join(here, 'src');
export const CONSOLE_DIST = path.join(here, 'dist');
/** Written last: its presence and time say a complete build exists. */
const STAMP = path.join(CONSOLE_DIST, '.built');

async function newestInput(): Promise<number> {
  const files = (await readdir(CONSOLE_SRC, { recursive: true, withFileTypes: true }))
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name));
  files.push(fileURLToPath(import.meta.url), path.join(here, '..', '..', 'package-lock.json'));
  const times = await Promise.all(files.map(async (f) => (await stat(f).catch(() => null))?.mtimeMs ?? 0));
  return Math.max(...times);
}

/** Writes through a temporary name, so a concurrent reader sees the old file or the new one. */
async function writeAtomic(file: string, contents: Uint8Array | string) {
  const tmp = `${file}.${process.pid}.tmp`;
  await writeFile(tmp, contents);
  await rename(tmp, file);
}

export async function buildConsole(): Promise<{ files: string[]; ms: number }> {
  const started = performance.now();
  // esbuild is a build-time (dev) dependency: loaded only when a build actually runs.
  const esbuild = await import('esbuild');
  await mkdir(CONSOLE_DIST, { recursive: true });
  const result = await esbuild.build({
    entryPoints: { app: path.join(CONSOLE_SRC, 'main.ts'), 'app-style': path.join(CONSOLE_SRC, 'app.css') },
    bundle: true,
    format: 'esm',
    target: ['es2022'],
    minify: true,
    legalComments: 'linked',
    outdir: CONSOLE_DIST,
    write: false,
    logLevel: 'warning',
  });
  const files: string[] = [];
  for (const out of result.outputFiles) {
    const name = path.basename(out.path).replace('app-style.css', 'app.css');
    await writeAtomic(path.join(CONSOLE_DIST, name), out.contents);
    files.push(name);
  }
  const tmp = path.join(CONSOLE_DIST, `index.html.${process.pid}.tmp`);
  await copyFile(path.join(CONSOLE_SRC, 'index.html'), tmp);
  await rename(tmp, path.join(CONSOLE_DIST, 'index.html'));
  files.push('index.html');
  await writeAtomic(STAMP, new Date().toISOString());
  return { files, ms: Math.round(performance.now() - started) };
}

export async function consoleIsStale(): Promise<boolean> {
  const built = await stat(STAMP).catch(() => null);
  return !built || built.mtimeMs < (await newestInput());
}

/** Builds the console when its output is missing or stale; returns whether it built. */
export async function ensureConsoleBuilt(log: (message: string) => void = () => {}): Promise<boolean> {
  if (!(await consoleIsStale())) return false;
  const { ms } = await buildConsole();
  log(`built the browser console in ${ms} ms (api/console/dist)`);
  return true;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === path.resolve(process.argv[1])) {
  const { files, ms } = await buildConsole();
  process.stdout.write(`console built in ${ms} ms: ${files.join(', ')}\n`);
}
