import { Worker } from 'node:worker_threads';

/**
 * Runs a load-generator script in a worker thread and resolves with the one `{ sample }` message it
 * posts; rejects on the worker's error or when it has not answered within `deadlineMs`.
 */
export function sampleFromWorker<T>(script: URL, workerData: unknown, deadlineMs: number, what: string): Promise<T> {
  const worker = new Worker(script, { workerData });
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${what} did not finish within ${deadlineMs} ms`)), deadlineMs);
    worker.once('message', (m: { sample: T }) => {
      clearTimeout(timer);
      resolve(m.sample);
    });
    worker.once('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
  }).finally(() => void worker.terminate());
}
