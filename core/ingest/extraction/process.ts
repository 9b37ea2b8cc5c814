/**
 * The entry point of an extraction process (tinypool, runtime child_process; see ./pool.ts).
 *
 * A watchdog thread ends the process as soon as its parent is gone (its parent pid changes when it is
 * re-parented): the parent enforces the CPU and memory limits, so an orphan running a pathological
 * document would otherwise go on unwatched after a worker was killed. A thread, because the main
 * thread may be inside a synchronous parse for a long time.
 */
import { Worker } from 'node:worker_threads';
import { readAll, sendParts, type BytesMessage, type StartedMessage, type TaskResult, type WantBytesMessage } from './parts.ts';
import { runExtraction, type ExtractionTask, type WireTask } from './task.ts';

const watchdog = new Worker(
  `const { workerData } = require('node:worker_threads');
   setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 500);`,
  { eval: true, workerData: process.ppid },
);
watchdog.unref();

// The parent owns this process's life: a SIGINT or SIGTERM sent to the whole process group (Ctrl-C,
// a supervisor stopping the service) reaches this process too, but its parent first drains the task
// running here, then ends it (SIGKILL); the watchdog ends it if the parent is gone.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});

const sendNow = (message: unknown) =>
  new Promise<void>((sent, failed) => process.send!(message, undefined, {}, (err) => (err ? failed(err) : sent())));

/** One piece of the build's bytes, asked of the parent (it holds the only way to the stored bytes). */
function requestBytes(at: number, length: number): Promise<Uint8Array> {
  return new Promise<Uint8Array>((answered, failed) => {
    const onMessage = (message: unknown) => {
      if (typeof message !== 'object' || message === null || !('cairnBytes' in message)) return;
      process.off('message', onMessage);
      answered((message as BytesMessage).cairnBytes);
    };
    process.on('message', onMessage);
    sendNow({ cairnWantBytes: { at, length } } satisfies WantBytesMessage).catch((err: unknown) => {
      process.off('message', onMessage);
      failed(err);
    });
  });
}

/** The task with its bytes: a build's are asked of the parent piece by piece. */
async function withBytes(task: WireTask): Promise<ExtractionTask> {
  if (task.kind !== 'build') return task;
  const { size, ...build } = task;
  return { ...build, bytes: await readAll({ size, read: requestBytes }) };
}

/**
 * Tells the parent this process started the task (so it watches this pid from now on), runs it, and
 * sends a build's text and records ahead of the result (./parts.ts, sendParts).
 */
export default async function run(task: WireTask): Promise<TaskResult<unknown>> {
  await sendNow({ cairnExtractionStarted: process.pid } satisfies StartedMessage);
  // Sent in order on the same IPC channel as the result that follows them.
  return sendParts(await runExtraction(await withBytes(task)), sendNow);
}
