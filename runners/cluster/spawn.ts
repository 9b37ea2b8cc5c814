import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { clusterLayout, type ClusterLayout } from './layout.ts';

export type ClusterProcess = {
  /** The balancer's API address. */
  url: string;
  layout: ClusterLayout;
  /** The script's own output lines so far. */
  lines: string[];
  /** The current pid of a process the script supervises (api-1, worker-2, temporal, ...). */
  pid(name: string): number | undefined;
  /** How many times the script started it. */
  starts(name: string): number;
  /** Resolves when a line of the script's output matches (rejects when the script exits first). */
  waitForLine(re: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  /** SIGTERM, and wait for the script's ordered stop. */
  stop(): Promise<void>;
};

/**
 * `npm run cluster` (bin/cluster.ts) as a child process, for the cluster tests and benchmark: `env` is
 * its whole environment besides PATH and HOME (CLUSTER_PORT included); resolves once it reports ready.
 */
export async function spawnCluster(env: Record<string, string>, readyTimeoutMs = 300_000): Promise<ClusterProcess> {
  const layout = clusterLayout(Number(env.CLUSTER_PORT));
  const lines: string[] = [];
  const pids = new Map<string, number>();
  const starts = new Map<string, number>();
  const waiters = new Set<{ re: RegExp; resolve(m: RegExpMatchArray): void }>();
  const inherited = Object.fromEntries(['PATH', 'HOME', 'XDG_CACHE_HOME'].flatMap((k) => (process.env[k] ? [[k, process.env[k]]] : [])));
  const child = spawn(process.execPath, [fileURLToPath(new URL('../../bin/cluster.ts', import.meta.url))], {
    env: { ...inherited, ...env }, stdio: ['ignore', 'pipe', 'inherit'],
  });
  let buffered = '';
  child.stdout.on('data', (chunk: Buffer) => {
    buffered += chunk.toString();
    const complete = buffered.split('\n');
    buffered = complete.pop()!;
    for (const line of complete) {
      lines.push(line);
      const started = /\] (\S+) started \(pid (\d+)\)/.exec(line);
      if (started) {
        pids.set(started[1]!, Number(started[2]));
        starts.set(started[1]!, (starts.get(started[1]!) ?? 0) + 1);
      }
      for (const w of waiters) {
        const m = w.re.exec(line);
        if (m) {
          waiters.delete(w);
          w.resolve(m);
        }
      }
    }
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const waitForLine = (re: RegExp, timeoutMs = 60_000) => {
    const seen = lines.map((l) => re.exec(l)).find(Boolean);
    if (seen) return Promise.resolve(seen);
    return new Promise<RegExpMatchArray>((resolve, reject) => {
      const waiter = { re, resolve };
      waiters.add(waiter);
      const timer = setTimeout(() => {
        waiters.delete(waiter);
        reject(new Error(`no line matching ${re} within ${timeoutMs} ms:\n${lines.join('\n')}`));
      }, timeoutMs);
      void exited.then(() => {
        clearTimeout(timer);
        if (waiters.delete(waiter)) reject(new Error(`the cluster exited:\n${lines.join('\n')}`));
      });
    });
  };
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
  };
  try {
    await waitForLine(/\] ready in /, readyTimeoutMs);
  } catch (err) {
    await stop();
    throw err;
  }
  return {
    url: `http://127.0.0.1:${layout.balancer.api}`, layout, lines,
    pid: (n) => pids.get(n), starts: (n) => starts.get(n) ?? 0, waitForLine, stop,
  };
}
