/**
 * The entry point of an extraction process (tinypool, runtime child_process; see ./extraction-pool.ts).
 *
 * A watchdog thread ends the process as soon as its parent is gone (its parent pid changes when it is
 * re-parented): the parent enforces the CPU and memory limits, so an orphan running a pathological
 * document would otherwise go on unwatched after a worker was killed. A thread, because the main
 * thread may be inside a synchronous parse for a long time.
 */
import { Worker } from 'node:worker_threads';
import { sendParts, type StartedMessage, type TaskResult } from './extraction-parts.ts';
import { runExtraction, type ExtractionTask } from './extraction-task.ts';

const watchdog = new Worker(
  `const { workerData } = require('node:worker_threads');
   setInterval(() => { if (process.ppid !== workerData) process.kill(process.pid, 'SIGKILL'); }, 500);`,
  { eval: true, workerData: process.ppid },
);
watchdog.unref();

/**
 * Tells the parent this process started the task (so it watches this pid from now on), runs it, and
 * sends a build's text and records ahead of the result (./extraction-task.ts, sendParts).
 */
export default async function run(task: ExtractionTask): Promise<TaskResult<unknown>> {
  process.send?.({ cairnExtractionStarted: process.pid } satisfies StartedMessage);
  // Sent in order on the same IPC channel as the result that follows them.
  return sendParts(await runExtraction(task), (part) =>
    new Promise<void>((sent, failed) => process.send!(part, undefined, {}, (err) => (err ? failed(err) : sent()))));
}
