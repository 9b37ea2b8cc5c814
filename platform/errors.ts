/**
 * Domain errors: the one place where the spec's error codes (section 7) live. Routes, MCP tools and
 * activities throw these; one error handler per surface maps them to the wire.
 */
export type ErrorCode =
  | 'validation_error'
  | 'invalid_ingest_request'
  | 'unauthorized'
  | 'account_credits_exhausted'
  | 'processing_budget_exceeded'
  | 'forbidden'
  | 'query_answer_not_authorized'
  | 'preset_not_authorized'
  | 'not_found'
  | 'method_not_allowed'
  | 'idempotency_conflict'
  | 'operation_in_progress'
  | 'idempotency_expired'
  | 'revision_conflict'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'account_quota_exceeded'
  | 'rate_limited'
  | 'internal_error'
  | 'processing_interrupted'
  | 'processing_outcome_unverified'
  | 'ingest_job_failed'
  | 'service_unavailable'
  | 'credit_settlement_failed'
  // Codes for situations the spec leaves unstated (documented in docs/api.md).
  | 'account_exists'
  | 'account_deletion_pending'
  | 'device_code_expired'
  | 'device_code_used'
  | 'invalid_device_code'
  | 'slow_down';

export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  /** Extra response headers (retry-after, credit headers) that belong to this error. */
  readonly headers: Record<string, string>;
  constructor(status: number, code: ErrorCode, message: string, headers: Record<string, string> = {}) {
    super(message);
    this.name = 'AppError';
    this.status = status;
    this.code = code;
    this.headers = headers;
  }
}

export const validationError = (message: string) => new AppError(400, 'validation_error', message);
export const unauthorized = (message = 'A valid credential is required.') =>
  new AppError(401, 'unauthorized', message);
export const forbidden = (message = 'This credential is not allowed to do that.') =>
  new AppError(403, 'forbidden', message);
export const notFound = (message = 'Not found.') => new AppError(404, 'not_found', message);
