import { UsageError } from '../lib/dispatch.ts';
import { ApiError, ServiceUnreachable } from './http.ts';
import type { Output } from './output.ts';

// How a failed command ends: one line on stderr naming the error code (the service's stable code from
// the spec's error envelope, or one of the CLI's own below), the envelope as the JSON document on
// stdout under --json, and an exit status a script can branch on.

export const EXIT = {
  /** The service refused the request (4xx other than below), or a waited-for job/event did not succeed. */
  failed: 1,
  /** The command line or a local setting is wrong, or no credential is configured (EX_USAGE). */
  usage: 64,
  /** The service could not be reached or failed (5xx other than a refused source) (EX_UNAVAILABLE). */
  unavailable: 69,
  /** Try again later: rate limit, quota, an operation still running, a --wait that timed out (EX_TEMPFAIL). */
  tempfail: 75,
  /** The credential was refused or lacks the scope (401, 403) (EX_NOPERM). */
  noperm: 77,
} as const;

/** A CLI-side failure with its own code (`job_failed`, `wait_timeout`, `payload_too_large` before upload). */
export class CliFailure extends Error {
  readonly code: string;
  readonly exitCode: number;
  /** The command already printed its result (the job as it ended): --json gets no second document. */
  readonly resultPrinted: boolean;
  constructor(code: string, message: string, opts: { exitCode?: number; resultPrinted?: boolean } = {}) {
    super(message);
    this.code = code;
    this.exitCode = opts.exitCode ?? EXIT.failed;
    this.resultPrinted = opts.resultPrinted ?? false;
  }
}

type Described = { code: string; message: string; exitCode: number; resultPrinted?: boolean; status?: number; requestId?: string | null; retryAfter?: string | null };

/**
 * 5xx answers that are the service's verdict on the source, not a failure of the service: a preview
 * that could not safely produce a plan (a page answering 404, a refused redirect). The service works;
 * the same command with another source would succeed, so these are refusals (exit 1), not exit 69.
 */
const SOURCE_REFUSALS = new Set(['ingest_job_failed']);

function describe(err: unknown): Described {
  if (err instanceof UsageError) return { code: 'usage_error', message: err.message, exitCode: EXIT.usage };
  if (err instanceof ServiceUnreachable) return { code: 'service_unreachable', message: err.message, exitCode: EXIT.unavailable };
  if (err instanceof CliFailure) return { code: err.code, message: err.message, exitCode: err.exitCode, resultPrinted: err.resultPrinted };
  if (err instanceof ApiError) {
    const exitCode =
      err.status === 401 || err.status === 403 ? EXIT.noperm
        : err.status === 429 || err.code === 'operation_in_progress' ? EXIT.tempfail
          : err.status >= 500 && !SOURCE_REFUSALS.has(err.code) ? EXIT.unavailable
            : EXIT.failed;
    return { code: err.code, message: err.message, exitCode, status: err.status, requestId: err.requestId, retryAfter: err.retryAfter };
  }
  return { code: 'internal_error', message: err instanceof Error ? err.message : String(err), exitCode: EXIT.failed };
}

/** Prints the failure and returns the exit status. */
export function reportFailure(err: unknown, out: Output): number {
  const d = describe(err);
  const extra = [
    d.status ? `HTTP ${d.status}` : null,
    d.requestId ? `request ${d.requestId}` : null,
    d.retryAfter ? `retry after ${d.retryAfter}s` : null,
  ].filter(Boolean);
  process.stderr.write(`cairn: ${d.code}: ${d.message}${extra.length ? ` (${extra.join(', ')})` : ''}\n`);
  if (out.json && !d.resultPrinted) {
    const error = { code: d.code, message: d.message, ...(d.requestId ? { requestId: d.requestId } : {}), ...(d.status ? { status: d.status } : {}) };
    process.stdout.write(`${JSON.stringify({ error }, null, 2)}\n`);
  }
  return d.exitCode;
}
