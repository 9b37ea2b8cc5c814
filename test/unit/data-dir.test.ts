import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { assertEmbeddedUserCanEnter, makeDataDir } from '../../runners/preflight.ts';

// `npm run cluster` as root on a fresh clone (as CI and our machines run) created its data directory
// with mode 0700 and then refused to start: the embedded PostgreSQL runs as the user "postgres", which
// could not enter it. Run as root (the case), the check below is the one the start makes.

const scratch: string[] = [];
afterAll(async () => {
  for (const dir of scratch) await rm(dir, { recursive: true, force: true });
});

describe('the data directory a start creates', () => {
  it('can be entered by the embedded PostgreSQL user when run as root, and listed by no one else', async () => {
    const root = await mkdtemp(path.join(os.tmpdir(), 'cairn-datadir-'));
    scratch.push(root);
    await chmod(root, 0o755); // a checkout others may enter, as a clone under /work or /home is
    const dataDir = path.join(root, '.data', 'cluster');
    await makeDataDir(dataDir);
    const mode = (await stat(dataDir)).mode & 0o777;
    if (process.getuid?.() === 0) {
      expect(mode).toBe(0o711);
      await expect(assertEmbeddedUserCanEnter(dataDir)).resolves.toBeUndefined();
    } else {
      // Not root: PostgreSQL runs as this user, which owns the folder.
      expect(mode).toBe(0o700);
    }
    // The folder it creates for logs is its owner's alone.
    expect((await stat(path.join(dataDir, 'logs'))).mode & 0o777).toBe(0o700);
  });
});
