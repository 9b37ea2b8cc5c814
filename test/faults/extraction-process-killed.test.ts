import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { freePort } from '../helpers/ephemeral.ts';
import { nestedDivs } from '../helpers/hostile-files.ts';
import { extractionProcessesOf, spawnApi } from '../helpers/processes.ts';
import { uniqueTaskQueue } from '../helpers/services.ts';

// The API's extraction processes die as the kernel's OOM killer or an operator ends them (SIGKILL), idle
// and in the middle of a dry run, and the whole process group is stopped (SIGTERM): the API (a real
// bin/api.ts process) keeps answering, replaces them, and drains without a stack trace.

let db: TestDatabase;
let api: ChildProcess;
let output = '';
let base = '';
let secret = '';
// Deadlines that hold on a loaded machine (load 10+); every wait ends on the event it waits for.
const EVENTUALLY = { timeout: 90_000, interval: 100 };

beforeAll(async () => {
  db = await createTestDatabase();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  api = await spawnApi(db.url, uniqueTaskQueue(), port, { EXTRACTION_PROCESSES: '2' }, { detached: true, output: (c) => (output += c) });
  const account = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, {
    email: `x-${randomUUID()}@example.test`, password: 'a-long-enough-password', monthlyCredits: 50, onboardingCredits: 0,
  });
  ({ secret } = await createApiKey(db.orm.em.fork(), account.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' }));
}, 180_000);
afterAll(async () => {
  if (api && api.exitCode === null && api.signalCode === null) process.kill(-api.pid!, 'SIGKILL');
  await db?.drop();
});

/** A dry run of a file: the plan, or the error. */
async function preview(bytes: Buffer, contentType: string) {
  const res = await fetch(`${base}/v1/ingest/file`, {
    method: 'POST', headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: JSON.stringify({ filename: 'f', contentType, contentBase64: bytes.toString('base64') }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as { error?: { code: string; message: string }; plan?: unknown } };
}

const small = Buffer.from('# Kestrel\n\nKestrel launched in 2024 under Ana Smith.');
// Legal but slow to preview: about 4 s of one core on an idle machine.
const slow = nestedDivs(2_400_000);

/** The API's extraction processes. */
const extractionProcesses = () => extractionProcessesOf(api.pid!);

/** CPU time of a process in clock ticks (user + system), 0 once it is gone. */
async function cpuTicks(pid: number): Promise<number> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return stat ? Number(fields[11]) + Number(fields[12]) : 0;
}

/**
 * A slow dry run under way, and the extraction process running it: after a small dry run (so a
 * started, idle process is there to take it), the one of those processes whose CPU time then grows
 * by 10 ticks (0.1 s). Idle processes use none; processes starting later are not candidates.
 */
async function slowPreviewUnderWay() {
  expect((await preview(small, 'text/markdown')).status).toBe(200);
  const idle = await extractionProcesses();
  const before = new Map(await Promise.all(idle.map(async (pid) => [pid, await cpuTicks(pid)] as const)));
  const pending = preview(slow, 'text/html');
  let busy: number | undefined;
  await expect.poll(async () => {
    for (const [pid, ticks] of before) if ((await cpuTicks(pid)) - ticks >= 10) busy = pid;
    return busy;
  }, EVENTUALLY).toBeDefined();
  return { pending, busy: busy! };
}

const readyz = async () => (await fetch(`${base}/readyz`)).status;

describe('the API when one of its extraction processes dies', () => {
  it('idle (SIGKILL): the death is logged, a process replaces it, the API keeps answering and the next dry run succeeds', { timeout: 300_000 }, async () => {
    expect((await preview(small, 'text/markdown')).status).toBe(200);
    const idle = await extractionProcesses();
    expect(idle.length).toBeGreaterThan(0);
    for (const pid of idle) process.kill(pid, 'SIGKILL');
    await expect.poll(() => output, EVENTUALLY).toContain('an idle extraction process ended unexpectedly');
    expect(api.exitCode).toBeNull();
    expect(await readyz()).toBe(200);
    const after = await preview(small, 'text/markdown');
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(await extractionProcesses()).not.toEqual(expect.arrayContaining(idle));
    expect(api.exitCode).toBeNull();
  });

  it('busy (SIGKILL): that dry run is answered 502 ingest_job_failed with retry-after, and the API goes on', { timeout: 300_000 }, async () => {
    const { pending, busy } = await slowPreviewUnderWay();
    process.kill(busy, 'SIGKILL');
    const r = await pending;
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'ingest_job_failed', message: expect.stringContaining('ended before it finished') });
    expect(r.headers.get('retry-after')).toBe('1');
    expect(await readyz()).toBe(200);
    expect((await preview(small, 'text/markdown')).status).toBe(200);
    expect(api.exitCode).toBeNull();
  });

  it('SIGTERM to the whole process group during a dry run: the dry run is answered, the API exits 0 without a stack trace, no process is left', { timeout: 300_000 }, async () => {
    const { pending } = await slowPreviewUnderWay();
    const exited = new Promise<number | null>((resolve) => api.once('exit', (code) => resolve(code)));
    const from = output.length;
    process.kill(-api.pid!, 'SIGTERM');
    const r = await pending;
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await exited, output.slice(from)).toBe(0);
    // Nothing about a dead process, no stack: the processes ignored the signal and were closed after the drain.
    expect(output.slice(from)).not.toMatch(/exited unexpectedly|\n\s+at /);
    await expect.poll(extractionProcesses, EVENTUALLY).toEqual([]);
  });
});
