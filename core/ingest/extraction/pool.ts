/**
 * Untrusted parsing off every event loop (issue 24): extraction, record building and dry-run plans run
 * in a pool of child processes (tinypool, runtime child_process), one task per process at a time.
 *
 * Processes rather than worker threads: a thread's resourceLimits bound its V8 heap only, not the
 * ArrayBuffers pdf.js inflates streams into, and terminating a thread cannot interrupt native code
 * (zlib, a regular expression in C++); a process is killed whole and its memory returns to the system.
 * The parent reads each busy process's CPU time and resident memory from /proc every SAMPLE_MS and
 * kills it when either is over its limit (a wall-clock backstop covers systems without /proc). The
 * task then fails with ExtractionError('limit') naming the limit, and tinypool starts a fresh process
 * for the next one.
 *
 * A process may also die of something else at any time (the kernel's OOM killer, an operator's kill):
 * idle, it is logged and replaced; starting, its task runs in another; busy, its task fails with
 * ExtractionProcessLost, which is retryable. The processes ignore SIGINT and SIGTERM: a signal to the
 * whole process group (Ctrl-C, `kill -TERM -<pgid>`) reaches them beside their parent, which drains
 * its tasks and then closes the pool; a process whose parent is gone ends itself (./process.ts).
 */
import { readFile } from 'node:fs/promises';
import os from 'node:os';
import { Tinypool } from 'tinypool';
import type { Config, IngestLimits } from '../../../platform/config.ts';
import type { Logger } from '../../../platform/logger.ts';
import { assertContentMatches } from '../extract/decode.ts';
import { ExtractionError, type PageText, type SupportedContentType } from '../extract/types.ts';
import { partsReceiver, valueOf, type ByteSource, type BytesMessage, type StartedMessage, type TaskResult, type WantBytesMessage } from './parts.ts';
import type { WireTask } from './task.ts';
import type { NeedsOcr, Plan, PreparedSource, Previewable } from '../prepare/prepare.ts';

export type ExtractionPoolOptions = {
  /** Processes at most (EXTRACTION_PROCESSES). */
  processes: number;
  /** CPU time one task may use (EXTRACTION_CPU_SECONDS). */
  cpuSeconds: number;
  /** Resident memory one process may reach (EXTRACTION_MEMORY_MB). */
  memoryMb: number;
  limits: IngestLimits;
  /** Nice value of the processes: request handling and the worker's own loop keep the cores first. */
  nice?: number;
  logger?: Logger;
};

/**
 * A task's process died while running it, of something other than a limit of the pool (a signal from
 * outside, a crash): nothing says the document is at fault, so the task may be tried again.
 */
export class ExtractionProcessLost extends Error {
  readonly retryable = true;
  constructor(options?: { cause?: unknown }) {
    super('The extraction process ended before it finished (it was stopped from outside); nothing was kept, and the work can be tried again.', options);
    this.name = 'ExtractionProcessLost';
  }
}

/** Every task names the account it is for: processes are shared fairly between accounts. */
export type ExtractionPool = {
  /** Throws ExtractionError('type_mismatch') when the bytes are not what `contentType` says. */
  check(accountId: string, bytes: Uint8Array, contentType: SupportedContentType): Promise<void>;
  /** The plan, or the scanned pages to OCR first (then preview again with their text as `ocr`). */
  preview(accountId: string, doc: Previewable): Promise<Plan | NeedsOcr>;
  build(
    accountId: string,
    input: { jobId: string; source: ByteSource; contentType: SupportedContentType; sourceUrl?: string; crossSiteRedirect: boolean; ocr?: PageText[] },
  ): Promise<PreparedSource | NeedsOcr>;
  /** OCR of a PDF's pages (core/ingest/ocr), under the same CPU and memory limits as any extraction. */
  ocr(accountId: string, bytes: Uint8Array, pages: number[]): Promise<PageText[]>;
  close(): Promise<void>;
};

/**
 * The pool's processes as slots shared between accounts: one account holds at most all but one of
 * them (one with a single process), so another account's document never waits behind a third of
 * the first one's, however long those run (up to the CPU limit each). Waiting tasks start in arrival
 * order among the accounts under their share.
 */
export function fairSlots(total: number) {
  const perAccount = Math.max(1, total - 1);
  const running = new Map<string, number>();
  const waiting: { accountId: string; start: () => void }[] = [];
  let busy = 0;
  const take = (accountId: string) => {
    busy++;
    running.set(accountId, (running.get(accountId) ?? 0) + 1);
  };
  const dispatch = () => {
    while (busy < total) {
      const i = waiting.findIndex((w) => (running.get(w.accountId) ?? 0) < perAccount);
      if (i === -1) return;
      const [next] = waiting.splice(i, 1);
      take(next!.accountId);
      next!.start();
    }
  };
  return {
    async acquire(accountId: string): Promise<void> {
      await new Promise<void>((start) => {
        waiting.push({ accountId, start });
        dispatch();
      });
    },
    release(accountId: string) {
      busy--;
      const left = running.get(accountId)! - 1;
      if (left > 0) running.set(accountId, left);
      else running.delete(accountId);
      dispatch();
    },
  };
}

/**
 * Up to these sizes the submission check runs in the calling process: its worst case there is about a
 * millisecond of the event loop (a NUL scan and a UTF-8 decode at about 1 ms per MiB; JSON.parse of
 * 16 KiB of hostile JSON, such as 2,000 objects with distinct keys, about 1 ms; a PDF's is its header).
 * A pool process costs about as much at idle (a 30 KB check's round trip: 1 ms) but, at nice 19, waits
 * behind request handling under load: the mixed benchmark's file submissions took 40% longer at p95.
 * Larger bytes go to the pool, whose limits bound JSON.parse.
 */
const INLINE_CHECK_BYTES: Record<SupportedContentType, number> = {
  'application/pdf': Number.POSITIVE_INFINITY,
  'text/markdown': 1_048_576,
  'text/plain': 1_048_576,
  'text/html': 1_048_576,
  'application/json': 16_384,
};

/** The submission check: in the calling process up to INLINE_CHECK_BYTES, otherwise as a pool task. */
function checkWith(run: (accountId: string, task: WireTask) => Promise<unknown>): ExtractionPool['check'] {
  return async (accountId, bytes, contentType) => {
    if (bytes.byteLength <= INLINE_CHECK_BYTES[contentType]) assertContentMatches(bytes, contentType);
    else await run(accountId, { kind: 'check', bytes, contentType });
  };
}

const SAMPLE_MS = 100;
/** /proc reports CPU time in clock ticks of USER_HZ, which Linux fixes at 100 for user space. */
const TICK_MS = 10;

type Usage = { cpuMs: number; rssBytes: number };

/** CPU time and resident memory of a process, or null when it is gone (or there is no /proc). */
async function usageOf(pid: number): Promise<Usage | null> {
  try {
    const [stat, status] = await Promise.all([readFile(`/proc/${pid}/stat`, 'latin1'), readFile(`/proc/${pid}/status`, 'latin1')]);
    // Fields after the command name (which may hold spaces): state is 3rd, utime 14th, stime 15th.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const rssKb = Number(/^VmRSS:\s+(\d+)/m.exec(status)?.[1] ?? 0);
    return { cpuMs: (Number(fields[11]) + Number(fields[12])) * TICK_MS, rssBytes: rssKb * 1024 };
  } catch {
    return null;
  }
}

/** tinypool's processes, one task at a time each. */
function processPool(opts: ExtractionPoolOptions): Tinypool {
  return new Tinypool({
    filename: new URL('./process.ts', import.meta.url).href,
    runtime: 'child_process',
    // Structured clone over the IPC channel: bytes and records travel without JSON.
    serialization: 'advanced',
    // At least one process: tinypool replaces a killed process only up to minThreads, and tasks queued
    // behind it would otherwise wait for the next task to arrive. It also keeps a preview from paying
    // for a process start (about half a second).
    minThreads: 1,
    maxThreads: opts.processes,
    idleTimeout: 60_000,
    // The V8 heap stops at the limit too (the process dies with it); the sampling also sees buffers.
    execArgv: [`--max-old-space-size=${opts.memoryMb}`],
    // A process that kept a large heap after a task is replaced rather than reused. Not lower: heapUsed
    // includes garbage not yet collected, so ordinary documents cross 64 MB, and tinypool holds a task's
    // result until its process is replaced (30 small files took 9 to 24 s instead of 4 to 5).
    maxMemoryLimitBeforeRecycle: (opts.memoryMb * 1_048_576) / 2,
    env: process.env as Record<string, string>,
  });
}

const overTime = (opts: ExtractionPoolOptions) => `exceeded its time limit of ${opts.cpuSeconds} s of CPU`;

/**
 * Watches the process `pid` that started a task: lowers its priority, and calls `stop` with the limit
 * it went over, from its CPU time and resident memory sampled every SAMPLE_MS.
 */
function watchProcess(pid: number, opts: ExtractionPoolOptions, stop: (why: string) => void) {
  const cpuMs = opts.cpuSeconds * 1000;
  if (opts.nice) {
    try {
      os.setPriority(pid, opts.nice);
    } catch (err) {
      opts.logger?.debug({ err, pid }, 'extraction process priority not lowered');
    }
  }
  let base: number | null = null;
  let firstRss: number | null = null;
  let lastRss = 0;
  let peakRss = 0;
  let stopped = false;
  const sample = async () => {
    const usage = await usageOf(pid);
    if (!usage || stopped) return;
    base ??= usage.cpuMs;
    firstRss ??= usage.rssBytes;
    lastRss = usage.rssBytes;
    peakRss = Math.max(peakRss, lastRss);
    if (usage.cpuMs - base > cpuMs) stop(overTime(opts));
    else if (usage.rssBytes > opts.memoryMb * 1_048_576) stop(`exceeded its memory limit of ${opts.memoryMb} MB`);
  };
  void sample();
  const timer = setInterval(() => void sample(), SAMPLE_MS);
  // Queued time does not count: the backstop starts with the work. CPU time never exceeds wall time
  // on one core, so this only fires where sampling does not work.
  const backstop = setTimeout(() => stop(overTime(opts)), cpuMs * 4 + 10_000);
  return {
    lastRssBytes: () => lastRss,
    /** How far the task took the process's resident memory above what it had when the task started. */
    grewBytes: () => peakRss - (firstRss ?? peakRss),
    dispose() {
      stopped = true;
      clearInterval(timer);
      clearTimeout(backstop);
    },
  };
}

/**
 * Replacing and closing the processes. tinypool reports a process that died without a task as an
 * 'error' event: unheard, it would end this process. It replaces a ready process itself, but not once
 * a process died while starting; with none left, a task queued for it would wait for the next task.
 */
function processLives(pool: Tinypool, logger?: Logger) {
  let closing = false;
  // A replacement in progress: it starts a new process when it ends, so closing waits for it.
  let recycling: Promise<void> = Promise.resolve();
  const recycle = () => {
    recycling = pool.recycleWorkers().catch((err: unknown) => logger?.warn({ err }, 'extraction processes not replaced'));
  };
  pool.on('error', (err: unknown) => {
    if (closing) return;
    logger?.warn({ err, processes: pool.threads.map((t) => t.threadId) }, 'an idle extraction process ended unexpectedly; it is replaced');
    if (pool.threads.length === 0) recycle();
  });
  return {
    closing: () => closing,
    /** Replaces the idle processes now and the busy ones after their task. */
    recycle() {
      if (!closing) recycle();
    },
    async close() {
      closing = true;
      await recycling;
      const pids = pool.threads.map((t) => t.threadId);
      const destroyed = pool.destroy();
      // tinypool's SIGTERM is ignored by the processes; it would fall back to SIGKILL after a second.
      for (const p of pids) killNow(p);
      await destroyed;
    },
  };
}

/**
 * `attempt`, again when its process died before the task started in it (while the process was
 * starting or idle): the task never ran. A few times at most; then, or while closing, the task fails
 * as ExtractionProcessLost.
 */
async function unlessNotStarted<T>(attempt: () => Promise<T>, closing: () => boolean, logger?: Logger): Promise<T> {
  for (let n = 1; ; n++) {
    try {
      return await attempt();
    } catch (err) {
      if (!(err instanceof NotStarted)) throw err;
      if (n === 3 || closing()) throw new ExtractionProcessLost({ cause: err });
      logger?.warn({ err, attempt: n }, 'extraction process ended before its task started; trying another');
    }
  }
}

export function createExtractionPool(opts: ExtractionPoolOptions): ExtractionPool {
  const memoryBytes = opts.memoryMb * 1_048_576;
  const pool = processPool(opts);
  const slots = fairSlots(opts.processes);
  const lives = processLives(pool, opts.logger);

  async function run<T>(accountId: string, task: WireTask, source?: ByteSource): Promise<T> {
    await slots.acquire(accountId);
    try {
      return await unlessNotStarted(() => runNow<T>(task, source), lives.closing, opts.logger);
    } finally {
      slots.release(accountId);
    }
  }

  async function runNow<T>(task: WireTask, source?: ByteSource): Promise<T> {
    const abort = new AbortController();
    let exceeded: string | null = null;
    let readFailed: unknown;
    let watch: ReturnType<typeof watchProcess> | undefined;
    let pid: number | undefined;
    // tinypool asks the process to end with SIGTERM, which the processes ignore (see above): no grace.
    const end = () => (abort.abort(), pid !== undefined && killNow(pid));
    const stop = (why: string) => {
      exceeded ??= why;
      end();
    };
    const parts = partsReceiver();
    let toProcess: ((message: BytesMessage) => void) | undefined;
    // A piece of the build's bytes the process asked for; a failed read ends the task with its error.
    const serve = async ({ at, length }: WantBytesMessage['cairnWantBytes']) => {
      try {
        const piece = await source?.read(at, length);
        if (!piece) throw new Error(`the stored bytes ended at ${at}`);
        toProcess?.({ cairnBytes: piece });
      } catch (err) {
        readFailed ??= err;
        end();
      }
    };
    const channel = {
      onMessage(send: (message: BytesMessage) => void) {
        toProcess = send;
      },
      postMessage(message: unknown) {
        if (parts.take(message)) return;
        const want = (message as Partial<WantBytesMessage> | null)?.cairnWantBytes;
        if (want) {
          void serve(want);
          return;
        }
        const started = (message as Partial<StartedMessage> | null)?.cairnExtractionStarted;
        if (typeof started === 'number' && !watch) watch = watchProcess((pid = started), opts, stop);
      },
    };
    try {
      const result = (await pool.run(task, { signal: abort.signal, channel })) as TaskResult<T>;
      return valueOf(parts.restore(result));
    } catch (err) {
      if (err instanceof ExtractionError) throw err;
      if (readFailed) throw readFailed;
      if (exceeded) throw new ExtractionError('limit', `Extraction ${exceeded}.`);
      // The process died without being stopped here: V8 stops at --max-old-space-size, and the OOM
      // killer picks the largest process; a process low on memory was stopped from outside (or crashed).
      if (err instanceof Error && /exited unexpectedly/.test(err.message)) {
        if (pid === undefined) throw new NotStarted(err);
        const lastRssBytes = watch?.lastRssBytes() ?? 0;
        opts.logger?.warn({ err, pid, lastRssBytes, kind: task.kind }, 'extraction process ended unexpectedly');
        if (lastRssBytes > memoryBytes / 2) throw new ExtractionError('limit', `Extraction exceeded its memory limit of ${opts.memoryMb} MB.`);
        throw new ExtractionProcessLost({ cause: err });
      }
      throw err;
    } finally {
      watch?.dispose();
      // V8 keeps the pages a process grew to: after a large document (a 50 MB file took one from 110 to
      // 490 MB) the idle process would hold them beside the worker storing that document's records.
      // Growth within the task, not the level: processes creep up over many small documents, and
      // replacing them for that costs a process start each time. OCR processes stay: their recogniser
      // is worth keeping, and they run in batches.
      if (task.kind !== 'ocr' && (watch?.grewBytes() ?? 0) > memoryBytes / 8) lives.recycle();
    }
  }

  return {
    check: checkWith(run),
    preview: (accountId, doc) => run(accountId, { kind: 'preview', ...doc, limits: opts.limits }),
    build: (accountId, { source, ...input }) => run(accountId, { kind: 'build', ...input, size: source.size, limits: opts.limits }, source),
    ocr: (accountId, bytes, pages) => run(accountId, { kind: 'ocr', bytes, pages }),
    close: () => lives.close(),
  };
}

/** The task's process died before the task started in it. */
class NotStarted extends Error {
  constructor(cause: unknown) {
    super('the extraction process ended before the task started', { cause });
  }
}

function killNow(pid: number) {
  try {
    process.kill(pid, 'SIGKILL');
  } catch {
    // Already gone.
  }
}

/**
 * The pool a process's configuration asks for (EXTRACTION_*, INGEST_MAX_*). With background priority
 * on (BACKGROUND_NICE > 0) its processes run at the lowest priority, 19: below the worker's own event
 * loop (heartbeats, memory events, workflow tasks), the database and Temporal, so a document that
 * takes its whole CPU allowance delays none of them.
 */
export function extractionPoolFor(config: Config, logger?: Logger): ExtractionPool {
  return createExtractionPool({ ...config.extraction, nice: config.worker.nice > 0 ? 19 : 0, logger });
}
