import { Worker } from 'node:worker_threads';

/**
 * Runs a load-generator script in a worker thread and resolves with the `{ sample }` message it
 * posts; rejects on the worker's error or when it has not answered within `deadlineMs`. A script that
 * warms up first posts `{ warmed: true }` and waits: `onWarmed` runs then, and `go` lets it measure.
 */
export function sampleFromWorker<T>(
  script: URL, workerData: unknown, deadlineMs: number, what: string, onWarmed?: () => Promise<void>,
): Promise<T> {
  const worker = new Worker(script, { workerData });
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not finish within ${deadlineMs} ms`)), deadlineMs);
    worker.on('message', (m: { sample: T } | { warmed: true }) => {
      if ('warmed' in m) {
        (onWarmed ?? (async () => {}))().then(() => worker.postMessage('go'), (err: unknown) => {
          clearTimeout(timer);
          reject(err instanceof Error ? err : new Error(String(err)));
        });
        return;
      }
      clearTimeout(timer);
      resolve(m.sample);
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  }).finally(() => void worker.terminate());
}
