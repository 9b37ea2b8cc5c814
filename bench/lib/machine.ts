import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import { promisify } from 'node:util';
import pg from 'pg';

export type Machine = {
  cpu: string;
  cores: number;
  memoryGiB: number;
  os: string;
  node: string;
  postgres: string;
  postgresSource: 'embedded' | 'DATABASE_URL';
};

/** What the numbers were measured on. The database URL itself is never recorded (it may hold a password). */
export async function describeMachine(databaseUrl: string, postgresSource: Machine['postgresSource']): Promise<Machine> {
  const cpus = os.cpus();
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  let version: string;
  try {
    const { rows } = await client.query<{ version: string }>('select version()');
    version = rows[0]!.version;
  } finally {
    await client.end();
  }
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    os: `${os.type()} ${os.release()} ${os.arch()}`,
    node: process.version,
    // "PostgreSQL 18.1 on x86_64-pc-linux-gnu, compiled by ..." -> "PostgreSQL 18.1"
    postgres: version.split(' on ')[0]!.trim(),
    postgresSource,
  };
}

export function machineLine(m: Machine): string {
  return (
    `${m.cpu}, ${m.cores} cores, ${m.memoryGiB} GiB; ${m.os}; Node ${m.node}; ` +
    `${m.postgres} (${m.postgresSource === 'embedded' ? 'embedded' : 'DATABASE_URL'})`
  );
}

/**
 * Share of CPU time idle across all cores over `ms`: a benchmark started while something else keeps the
 * cores busy measures that too, so the runner records this and warns.
 */
export async function cpuIdlePercent(ms = 2000): Promise<number> {
  const total = () =>
    os.cpus().reduce(
      (acc, c) => {
        const t = c.times;
        acc.idle += t.idle;
        acc.all += t.user + t.nice + t.sys + t.idle + t.irq;
        return acc;
      },
      { idle: 0, all: 0 },
    );
  const before = total();
  await new Promise((r) => setTimeout(r, ms));
  const after = total();
  const all = after.all - before.all;
  return all > 0 ? Math.round(((after.idle - before.idle) / all) * 100) : 100;
}

type CpuSnapshot = { machineBusy: number; machineAll: number; ours: number };
type ProcessRow = { ppid: number; comm: string; ticks: number };

/** Every process's parent, command name and CPU ticks (its own plus its waited-for children's), from /proc. */
async function processTable(): Promise<Map<number, ProcessRow>> {
  const procs = new Map<number, ProcessRow>();
  for (const entry of await readdir('/proc').catch(() => [])) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const text = await readFile(`/proc/${entry}/stat`, 'utf8');
      // Fields after the parenthesised command: state ppid ... utime(14) stime(15) cutime(16) cstime(17)
      const rest = text.slice(text.lastIndexOf(')') + 2).split(' ');
      const ppid = Number(rest[1]);
      const ticks = Number(rest[11]) + Number(rest[12]) + Number(rest[13]) + Number(rest[14]);
      procs.set(Number(entry), { ppid, comm: text.slice(text.indexOf('(') + 1, text.lastIndexOf(')')), ticks });
    } catch {
      // the process ended while we looked: its time is in its parent's cutime/cstime by the next snapshot
    }
  }
  return procs;
}

/** The first child of this process whose command name is `comm` (a server a benchmark started). */
export async function childPid(comm: string): Promise<number | undefined> {
  for (const [pid, p] of await processTable()) if (p.ppid === process.pid && p.comm === comm) return pid;
  return undefined;
}

/**
 * CPU milliseconds used so far by each named process tree (a root pid and all its descendants), so a
 * benchmark can say which process its time went to.
 */
export async function treeCpuMs<K extends string>(roots: Record<K, number | undefined>): Promise<Record<K, number>> {
  const procs = await processTable();
  const children = childrenOf(procs);
  const out = {} as Record<K, number>;
  for (const name of Object.keys(roots) as K[]) out[name] = subtreeTicks(procs, children, roots[name]) * TICK_MS;
  return out;
}

const TICK_MS = 10; // /proc counts in USER_HZ ticks: 100 per second

/** A read of /proc, or `fallback` when the process ended meanwhile. */
function readOr<T>(read: () => T, fallback: T): T {
  try {
    return read();
  } catch {
    return fallback;
  }
}

/** A process and its descendants, from /proc/<pid>/task/<tid>/children (each thread's children). */
function treeOf(root: number): number[] {
  const pids: number[] = [];
  for (const stack = [root]; stack.length > 0;) {
    const pid = stack.pop()!;
    pids.push(pid);
    for (const tid of readOr(() => readdirSync(`/proc/${pid}/task`), [])) {
      for (const kid of readOr(() => readFileSync(`/proc/${pid}/task/${tid}/children`, 'latin1'), '').split(' ')) if (kid.trim()) stack.push(Number(kid));
    }
  }
  return pids;
}

/** Resident memory now and at its peak (kB) of a process, from one read of /proc/<pid>/status (0 when gone). */
function residentKb(pid: number): { rss: number; hwm: number } {
  const status = readOr(() => readFileSync(`/proc/${pid}/status`, 'latin1'), '');
  const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1] ?? 0);
  return { rss: kb('VmRSS'), hwm: kb('VmHWM') };
}

/**
 * Watches the resident memory of a process tree (a worker and its extraction processes) every
 * `everyMs`, with synchronous reads of /proc (microseconds each). `stop()` gives the peak of the
 * tree's sum at one moment, and the sum of each process's own peak (VmHWM, kept for processes that
 * ended meanwhile): the first is what the machine needed, the second bounds it from above.
 */
export function watchTreeRss(root: number, everyMs = 100): { stop(): { peakOfSumMb: number; sumOfPeaksMb: number } } {
  const peaks = new Map<number, number>();
  let peakOfSum = 0;
  const sample = () => {
    let sum = 0;
    for (const pid of treeOf(root)) {
      const { rss, hwm } = residentKb(pid);
      sum += rss;
      if (hwm > (peaks.get(pid) ?? 0)) peaks.set(pid, hwm);
    }
    peakOfSum = Math.max(peakOfSum, sum);
  };
  sample();
  const timer = setInterval(sample, everyMs);
  return {
    stop() {
      clearInterval(timer);
      sample();
      return { peakOfSumMb: peakOfSum / 1024, sumOfPeaksMb: [...peaks.values()].reduce((a, b) => a + b, 0) / 1024 };
    },
  };
}

function childrenOf(procs: Map<number, ProcessRow>): Map<number, number[]> {
  const children = new Map<number, number[]>();
  for (const [pid, p] of procs) children.set(p.ppid, [...(children.get(p.ppid) ?? []), pid]);
  return children;
}

function subtreeTicks(procs: Map<number, ProcessRow>, children: Map<number, number[]>, root: number | undefined): number {
  let ticks = 0;
  const stack = root === undefined ? [] : [root];
  while (stack.length) {
    const pid = stack.pop()!;
    ticks += procs.get(pid)?.ticks ?? 0;
    stack.push(...(children.get(pid) ?? []));
  }
  return ticks;
}

/** Busy and total CPU ticks of the machine (/proc/stat) and ticks used by this process and its descendants. */
async function cpuSnapshot(): Promise<CpuSnapshot | undefined> {
  let stat: string;
  try {
    stat = await readFile('/proc/stat', 'utf8');
  } catch {
    return undefined; // not Linux: no accounting
  }
  // cpu  user nice system idle iowait irq softirq steal ...
  const f = stat.split('\n')[0]!.trim().split(/\s+/).slice(1, 9).map(Number);
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f as [number, number, number, number, number, number, number, number];
  // Only time charged to processes: interrupt work (loopback networking is mostly softirq) and time the
  // hypervisor took belong to no process, so they count as neither ours nor others'.
  const machineBusy = user + nice + system;
  const machineAll = machineBusy + idle + iowait + irq + softirq + steal;

  const ours = (await treeCpuMs({ ours: process.pid })).ours / TICK_MS; // back to ticks, as /proc/stat counts
  return { machineBusy, machineAll, ours };
}

/**
 * Starts accounting for CPU time that other processes (not this one, its worker threads or its children
 * such as the embedded PostgreSQL) use while a benchmark runs. `stop()` answers the share of the whole
 * machine's CPU they used, in percent (undefined where /proc is not available). An external database
 * (DATABASE_URL) on this machine counts as another process.
 */
export async function startCpuAccounting(): Promise<{ stop(): Promise<number | undefined> }> {
  const before = await cpuSnapshot();
  return {
    async stop() {
      const after = await cpuSnapshot();
      if (!before || !after || after.machineAll <= before.machineAll) return undefined;
      const others = after.machineBusy - before.machineBusy - (after.ours - before.ours);
      return Math.max(0, Math.round((others / (after.machineAll - before.machineAll)) * 1000) / 10);
    },
  };
}

export type QuietOptions = { attempts: number; maxOtherCpuPercent: number; log?: (message: string) => void };

/** Retry policy for measurements on a machine that may be shared: 3 tries, others may use up to 5%. */
export const QUIET: QuietOptions = { attempts: 3, maxOtherCpuPercent: 5 };

/**
 * Runs one measurement, repeating it (at most `attempts` times in all) while other processes used more
 * than `maxOtherCpuPercent` of the CPU meanwhile; answers the cleanest attempt and how clean it was.
 */
export async function measureQuietly<T>(
  measure: () => Promise<T>,
  opts: QuietOptions,
): Promise<{ value: T; otherCpuPercent: number | undefined }> {
  let best: { value: T; otherCpuPercent: number | undefined } | undefined;
  for (let attempt = 1; attempt <= opts.attempts; attempt++) {
    const cpu = await startCpuAccounting();
    const value = await measure();
    const otherCpuPercent = await cpu.stop();
    if (!best || (otherCpuPercent ?? 0) < (best.otherCpuPercent ?? 0)) best = { value, otherCpuPercent };
    if ((otherCpuPercent ?? 0) <= opts.maxOtherCpuPercent) break;
    opts.log?.(
      `other processes used ${otherCpuPercent}% of the CPU meanwhile; ` +
        (attempt < opts.attempts ? 'measuring again' : 'keeping the cleanest attempt'),
    );
  }
  return best!;
}

/** The commit measured, and whether the work tree had changes (undefined outside a git checkout). */
export async function describeCode(): Promise<{ commit: string; dirty: boolean } | undefined> {
  const git = promisify(execFile);
  try {
    const { stdout: commit } = await git('git', ['rev-parse', '--short=12', 'HEAD']);
    // The results files a run itself rewrites do not make the measured code dirty.
    const { stdout: status } = await git('git', ['status', '--porcelain', '--untracked-files=no', '--', '.', ':!docs/benchmarks*']);
    return { commit: commit.trim(), dirty: status.trim() !== '' };
  } catch {
    return undefined;
  }
}
