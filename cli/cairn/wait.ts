import { setTimeout as sleep } from 'node:timers/promises';
import { UsageError } from '../lib/dispatch.ts';
import { CliFailure, EXIT } from './failure.ts';
import type { Output } from './output.ts';

export const WAIT_OPTIONS = { wait: { type: 'boolean' }, timeout: { type: 'string' } } as const;

/** `--timeout SECONDS` for a --wait (default 10 minutes, at most a day). */
export function waitTimeoutMs(raw: string | undefined): number {
  if (raw === undefined) return 600_000;
  const s = Number(raw);
  if (!Number.isInteger(s) || s < 1 || s > 86_400) throw new UsageError('--timeout: whole seconds from 1 to 86400');
  return s * 1000;
}

/**
 * Reads something until it reaches a terminal state (an ingest job, a memory event), printing a
 * progress line on stderr whenever its description changes. Polls quickly at first, then every two
 * seconds; gives up at the deadline with `wait_timeout` (exit 75: it may still finish).
 */
export async function waitUntil<T>(opts: {
  read: () => Promise<T>;
  done: (value: T) => boolean;
  describe: (value: T) => string;
  out: Output;
  timeoutMs: number;
  what: string;
}): Promise<T> {
  const deadline = Date.now() + opts.timeoutMs;
  let last = '';
  for (let attempt = 0; ; attempt++) {
    const value = await opts.read();
    const line = opts.describe(value);
    if (line !== last) {
      opts.out.note(line);
      last = line;
    }
    if (opts.done(value)) return value;
    if (Date.now() >= deadline) {
      throw new CliFailure('wait_timeout', `${opts.what} has not ended after ${Math.round(opts.timeoutMs / 1000)}s; it may still finish`, { exitCode: EXIT.tempfail });
    }
    await sleep(Math.min(250 * 2 ** attempt, 2000, Math.max(0, deadline - Date.now())));
  }
}
