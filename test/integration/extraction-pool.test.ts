import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { ExtractionError } from '../../core/ingest/extract/index.ts';
import { bytesSource } from '../../core/ingest/extraction/parts.ts';
import { createExtractionPool, ExtractionProcessLost, type ExtractionPool } from '../../core/ingest/extraction/pool.ts';
import { inProcessExtraction } from '../helpers/in-process-extraction.ts';
import { flateBombPdf, keyPathBomb, nestedDivs } from '../helpers/hostile-files.ts';

// Extraction runs in child processes with a CPU-time and a memory limit (issue 24): real processes,
// real documents, no stand-ins.

const LIMITS = { maxPdfPages: 2000, maxExpansion: 20, maxRecordsPerKb: 128 };
const pools: ExtractionPool[] = [];
const poolWith = (over: { cpuSeconds?: number; memoryMb?: number; limits?: Partial<typeof LIMITS> }) => {
  const pool = createExtractionPool({ processes: 1, cpuSeconds: 60, memoryMb: 1024, ...over, limits: { ...LIMITS, ...over.limits } });
  pools.push(pool);
  return pool;
};
// Each test's pools end with it: a process one of them starts late is not counted as the next test's.
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

/** Live child processes of `parent`, from /proc. */
async function childrenOf(parent: number): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === parent) pids.push(Number(entry));
  }
  return pids;
}

/** Running (a zombie waiting for its new parent to reap it is not). */
const alive = async (pid: number) => {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  return stat !== '' && stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
};

const build = async (pool: ExtractionPool, bytes: Buffer, contentType: 'text/html' | 'application/pdf' | 'application/json' | 'text/markdown') => {
  const built = await pool.build('account-a', { jobId: '00000000-0000-4000-8000-000000000001', source: bytesSource(bytes), contentType, crossSiteRedirect: false });
  if ('needsOcr' in built) throw new Error('unexpected scanned pages');
  return built;
};

describe('extraction processes', () => {
  it('end a document over the CPU-time limit, naming the limit, while this event loop keeps running; the next task gets a fresh process', async () => {
    const before = await childrenOf(process.pid);
    const pool = poolWith({ cpuSeconds: 1 });
    // The pool keeps one process warm: the one that will run the task.
    let runner: number | undefined;
    for (let i = 0; i < 100 && runner === undefined; i++, await sleep(50)) runner = (await childrenOf(process.pid)).find((p) => !before.includes(p));
    expect(runner).toBeDefined();
    let ticks = 0;
    const timer = setInterval(() => ticks++, 50);
    const err = await build(pool, nestedDivs(400_000), 'text/html').catch((e: unknown) => e);
    clearInterval(timer);
    expect(err).toBeInstanceOf(ExtractionError);
    expect(err).toMatchObject({ reason: 'limit', publicMessage: 'Extraction exceeded its time limit of 1 s of CPU.' });
    expect(ticks).toBeGreaterThan(5);
    // The process that ran it is gone (tinypool kills it: SIGTERM, then SIGKILL).
    for (let i = 0; i < 40 && (await alive(runner!)); i++) await sleep(100);
    expect(await alive(runner!)).toBe(false);

    const ok = await build(pool, Buffer.from('# Kestrel\n\nKestrel launched in 2024 under Ana Smith.'), 'text/markdown');
    expect(ok.title).toBe('Kestrel');
    expect(ok.counts.total).toBeGreaterThan(0);
  });

  it('end a process over the memory limit, naming the limit', async () => {
    // Without the inflation bound, pdf.js keeps the 256 MiB content stream whole.
    const pool = poolWith({ memoryMb: 300, limits: { maxExpansion: 100_000 } });
    const err = await build(pool, flateBombPdf(256), 'application/pdf').catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ExtractionError);
    expect(err).toMatchObject({ reason: 'limit', publicMessage: 'Extraction exceeded its memory limit of 300 MB.' });
  });

  it('refuse expansion past its bounds: inflated streams, pages, and text per input byte', async () => {
    const pool = poolWith({ limits: { maxPdfPages: 1 } });
    await expect(build(pool, flateBombPdf(256), 'application/pdf')).rejects.toMatchObject({
      reason: 'limit', message: expect.stringContaining('its compressed streams inflate to more than 64 MB'),
    });
    const multipage = await readFile('test/fixtures/ingest/multipage.pdf');
    await expect(build(pool, multipage, 'application/pdf')).rejects.toMatchObject({ reason: 'limit', message: expect.stringMatching(/it has \d+ pages, more than 1/) });
    // Every value of this 64 KB document once carried its 60 KB key path (over 120 MB of text).
    const json = keyPathBomb();
    const doc = await build(pool, json, 'application/json');
    expect(doc.text.length).toBeLessThan(json.length * 6);
  });

  it('bring back a large build whole: its text and records arrive in parts, equal to the same build in this process', async () => {
    // Over a million characters and thousands of records: several parts of each.
    const md = Buffer.from(Array.from({ length: 1200 }, (_, j) => `## Part ${j}\n\nStation Vega${j} recorded ${j} storms in ${1900 + (j % 120)}; the keeper was Ines Morales${j}.\n`).join('\n').padEnd(1_300_000, '.'));
    const there = await build(poolWith({}), md, 'text/markdown');
    const here = await inProcessExtraction(LIMITS).build('account-a', { jobId: '00000000-0000-4000-8000-000000000001', source: bytesSource(md), contentType: 'text/markdown', crossSiteRedirect: false });
    expect(there.text.length).toBeGreaterThan(1_048_576);
    expect(there.rows.length).toBeGreaterThan(1000);
    expect(there).toEqual(here);
  });

  it('read a build\'s bytes piece by piece as its process asks for them, and end the task with a failed read\'s error', async () => {
    // The worker reads a stored document in pieces and never holds it whole: the process asks for each.
    const md = Buffer.from(Array.from({ length: 60_000 }, (_, j) => `Line ${j} of the Orlavik ledger.`).join('\n'));
    const reads: number[] = [];
    const source = { size: md.byteLength, read: async (at: number, length: number) => (reads.push(length), md.subarray(at, at + length)) };
    const pool = poolWith({});
    const there = await pool.build('account-a', { jobId: '00000000-0000-4000-8000-000000000001', source, contentType: 'text/markdown', crossSiteRedirect: false });
    expect(there).toEqual(await build(poolWith({}), md, 'text/markdown'));
    expect(reads.length).toBeGreaterThan(1);
    expect(Math.max(...reads)).toBeLessThanOrEqual(1_048_576);
    const failing = { size: md.byteLength, read: async (at: number) => (at > 0 ? Promise.reject(new Error('the row went away')) : md.subarray(0, 1_048_576)) };
    await expect(pool.build('account-a', { jobId: '00000000-0000-4000-8000-000000000001', source: failing, contentType: 'text/markdown', crossSiteRedirect: false }))
      .rejects.toThrow('the row went away');
    // The pool goes on with the next document.
    await expect(build(pool, Buffer.from('# Next\n\nFine.'), 'text/markdown')).resolves.toMatchObject({ title: 'Next' });
  });

  it('keep a process after a small document, and replace one that a document grew by more than an eighth of its memory limit', async () => {
    const before = await childrenOf(process.pid);
    const pool = poolWith({});
    const runners = async () => (await childrenOf(process.pid)).filter((p) => !before.includes(p));
    const small = Buffer.from('# Kestrel\n\nKestrel launched in 2024 under Ana Smith.');
    await build(pool, small, 'text/markdown');
    const [first] = await runners();
    await build(pool, small, 'text/markdown');
    expect(await runners()).toEqual([first]);
    // 14 MB of text takes it about 230 MB above where it started, more than 128 MB (an eighth of 1024 MB).
    await pool.build('account-a', { jobId: '00000000-0000-4000-8000-000000000001', source: bytesSource(Buffer.from('Paragraph one.\n\n'.repeat(900_000))), contentType: 'text/plain', crossSiteRedirect: false });
    for (let i = 0; i < 50 && (await alive(first!)); i++) await sleep(100);
    expect(await alive(first!)).toBe(false);
    await build(pool, small, 'text/markdown');
    expect((await runners()).length).toBe(1);
  });

  it('carry a refusal across the process boundary as the ExtractionError it was', async () => {
    const pool = poolWith({});
    // Over the sizes checked in the calling process (1 MiB of text, 16 KiB of JSON): these cross.
    await expect(pool.check('account-a', Buffer.from(`%PDF-1.7 ${'x'.repeat(1_100_000)}`), 'text/markdown')).rejects.toMatchObject({ reason: 'type_mismatch' });
    await expect(pool.check('account-a', Buffer.from(`[${'1,'.repeat(10_000)}`), 'application/json')).rejects.toMatchObject({ reason: 'type_mismatch' });
    await expect(pool.check('account-a', Buffer.from(`# fine\n\n${'Fine text. '.repeat(100_000)}`), 'text/markdown')).resolves.toBeUndefined();
  });

  it('check small bytes in the calling process, refusing them the same way, without waiting for a busy process', async () => {
    const pool = poolWith({ cpuSeconds: 5 });
    // The pool's one process is taken by another account's pathological document until its CPU limit.
    const busy = build(pool, nestedDivs(400_000), 'text/html').then(() => 'build', () => 'build');
    const checks = Promise.all([
      expect(pool.check('account-b', Buffer.from('%PDF-1.7 not markdown'), 'text/markdown')).rejects.toMatchObject({ reason: 'type_mismatch' }),
      expect(pool.check('account-b', Buffer.from('{"a": '), 'application/json')).rejects.toMatchObject({ reason: 'type_mismatch' }),
      expect(pool.check('account-b', Buffer.from('# fine'), 'text/markdown')).resolves.toBeUndefined(),
      expect(pool.check('account-b', Buffer.from('%PDF-1.7\n'), 'application/pdf')).resolves.toBeUndefined(),
    ]).then(() => 'checks');
    expect(await Promise.race([busy, checks])).toBe('checks');
    expect(await busy).toBe('build');
  });

  it('do not outlive a parent that was killed', async () => {
    // A parent that starts an endless extraction, then dies by SIGKILL: no one enforces the limits any more.
    const script = `
      import { createExtractionPool } from ${JSON.stringify(new URL('../../core/ingest/extraction/pool.ts', import.meta.url).href)};
      const pool = createExtractionPool({ processes: 1, cpuSeconds: 3600, memoryMb: 2048, limits: ${JSON.stringify(LIMITS)} });
      const html = Buffer.from('<html><body>' + '<div>'.repeat(2000000) + '</div>'.repeat(2000000) + '</body></html>');
      const source = { size: html.byteLength, read: async (at, length) => html.subarray(at, at + length) };
      pool.build('x', { jobId: 'x', source, contentType: 'text/html', crossSiteRedirect: false }).catch(() => {});
      setInterval(() => {}, 1000);`;
    const parent = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: 'ignore' });
    let child: number | undefined;
    for (let i = 0; i < 100 && child === undefined; i++) {
      await sleep(100);
      child = (await childrenOf(parent.pid!))[0];
    }
    expect(child).toBeDefined();
    await sleep(500); // the extraction is under way
    parent.kill('SIGKILL');
    for (let i = 0; i < 50 && (await alive(child!)); i++) await sleep(100);
    expect(await alive(child!)).toBe(false);
  });
});

/** A pool whose log lines are kept, to see what it says about its processes. */
function loggedPool(over: { processes?: number; cpuSeconds?: number }) {
  const lines: { level: number; msg: string; pid?: number }[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
  const pool = createExtractionPool({ processes: 1, cpuSeconds: 60, memoryMb: 1024, limits: LIMITS, ...over, logger });
  pools.push(pool);
  return { pool, lines };
}

/** Extraction processes started since `before` was taken, running (not zombies). */
async function newProcesses(before: number[]): Promise<number[]> {
  const out: number[] = [];
  for (const pid of await childrenOf(process.pid)) if (!before.includes(pid) && (await alive(pid))) out.push(pid);
  return out;
}

const small = Buffer.from('# Kestrel\n\nKestrel launched in 2024 under Ana Smith.');
// Deadlines that hold on a loaded machine (load 10+): a process start can take seconds there.
const EVENTUALLY = { timeout: 60_000, interval: 50 };

/** A build that tells when its process asks for the bytes: from then on the task is in that process. */
function announcedBuild(pool: ExtractionPool, bytes: Buffer) {
  let asked!: () => void;
  const started = new Promise<void>((resolve) => (asked = resolve));
  const source = { size: bytes.byteLength, read: async (at: number, length: number) => (asked(), bytes.subarray(at, at + length)) };
  const result = pool.build('account-a', { jobId: '00000000-0000-4000-8000-000000000001', source, contentType: 'text/html', crossSiteRedirect: false });
  return { started, result };
}

describe('an extraction process that dies (the OOM killer, an operator, a signal to the group)', () => {
  it('idle: is logged and replaced, and the next task runs', { timeout: 120_000 }, async () => {
    const before = await childrenOf(process.pid);
    const { pool, lines } = loggedPool({});
    await build(pool, small, 'text/markdown');
    const [idle] = await newProcesses(before);
    expect(idle).toBeDefined();
    process.kill(idle!, 'SIGKILL');
    await expect.poll(() => lines.some((l) => l.msg.startsWith('an idle extraction process ended')), EVENTUALLY).toBe(true);
    // The pool keeps one process warm: a new one takes the dead one's place without a task asking.
    await expect.poll(async () => (await newProcesses(before)).filter((p) => p !== idle).length, EVENTUALLY).toBe(1);
    await expect(build(pool, small, 'text/markdown')).resolves.toMatchObject({ title: 'Kestrel' });
  });

  it('busy: its task fails with a retryable error naming what happened, and the next task runs', { timeout: 120_000 }, async () => {
    const before = await childrenOf(process.pid);
    const { pool, lines } = loggedPool({ cpuSeconds: 600 });
    const { started, result } = announcedBuild(pool, nestedDivs(400_000));
    const outcome = result.catch((e: unknown) => e);
    await started;
    const [busy] = await newProcesses(before);
    process.kill(busy!, 'SIGKILL');
    const err = await outcome;
    expect(err).toBeInstanceOf(ExtractionProcessLost);
    expect(err).toMatchObject({ retryable: true, message: expect.stringContaining('ended before it finished') });
    expect(lines.some((l) => l.msg === 'extraction process ended unexpectedly' && l.pid === busy)).toBe(true);
    await expect(build(pool, small, 'text/markdown')).resolves.toMatchObject({ title: 'Kestrel' });
  });

  it('killed while it starts, with a task waiting for it: the task still runs', { timeout: 120_000 }, async () => {
    const before = await childrenOf(process.pid);
    const { pool } = loggedPool({});
    // The task waits for the process the pool is starting; that process dies before it is ready.
    const result = build(pool, small, 'text/markdown');
    const [starting] = await newProcesses(before);
    process.kill(starting!, 'SIGKILL');
    await expect(result).resolves.toMatchObject({ title: 'Kestrel' });
  });

  it('a SIGTERM or SIGINT sent to the whole process group does not end a busy process: its parent drains it', { timeout: 120_000 }, async () => {
    const before = await childrenOf(process.pid);
    const { pool, lines } = loggedPool({});
    const doc = Buffer.from(`<html><body>${'<p>Kestrel launched in 2024 under Ana Smith.</p>'.repeat(20_000)}</body></html>`);
    const { started, result } = announcedBuild(pool, doc);
    await started;
    const [busy] = await newProcesses(before);
    process.kill(busy!, 'SIGTERM');
    process.kill(busy!, 'SIGINT');
    await expect(result).resolves.toMatchObject({ counts: { total: expect.any(Number) } });
    expect(await alive(busy!)).toBe(true);
    expect(lines.filter((l) => l.level >= 40)).toEqual([]);
    // Closing the pool ends them.
    await pool.close();
    expect(await alive(busy!)).toBe(false);
  });
});
