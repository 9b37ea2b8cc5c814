import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Debian's Chromium, which the browser tests drive through playwright-core. */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

function run(command: string, args: string[], log: (m: string) => void): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    });
    let tail = '';
    const keep = (chunk: Buffer) => {
      tail = (tail + chunk.toString()).slice(-4000);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code === 0) resolve();
      else {
        log(tail);
        reject(new Error(`${command} ${args.join(' ')} exited with ${code}`));
      }
    });
  });
}

/**
 * Installs Debian's `chromium` package when it is missing (once per machine; the test setup runs as
 * root with no stdin, as CI does). Takes about two minutes on a fresh machine.
 */
export async function ensureChromium(log: (m: string) => void): Promise<void> {
  if (existsSync(CHROMIUM_PATH)) return;
  if (process.getuid?.() !== 0) {
    throw new Error(`${CHROMIUM_PATH} is missing and the tests are not running as root: install it with "sudo apt-get install -y chromium" (or set CHROMIUM_PATH).`);
  }
  log(`${CHROMIUM_PATH} is missing: installing Debian's chromium package for the browser tests (apt-get update && apt-get install -y chromium; about two minutes, once)...`);
  const started = performance.now();
  await run('apt-get', ['update'], log);
  await run('apt-get', ['install', '-y', 'chromium'], log);
  if (!existsSync(CHROMIUM_PATH)) throw new Error(`apt-get installed chromium but ${CHROMIUM_PATH} is still missing`);
  log(`installed chromium in ${((performance.now() - started) / 1000).toFixed(0)} s`);
}
