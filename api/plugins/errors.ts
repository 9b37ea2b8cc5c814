import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { hasZodFastifySchemaValidationErrors, isResponseSerializationError } from 'fastify-type-provider-zod';
import { AppError, type ErrorCode } from '../../platform/errors.ts';

type Mapped = { status: number; code: ErrorCode | string; message: string; headers?: Record<string, string> };

/**
 * How a failure is logged: `error` with its stack for an unexpected failure (a bug, a lost dependency);
 * `warn` without a stack for a deliberate 5xx outcome (an AppError such as 502 ingest_job_failed for a
 * source answering 404): the service did what it should, and a stack would only hide that; `info` for
 * the client's own mistakes (4xx).
 */
type LogLevel = 'error' | 'warn' | 'info';

/** Fastify's own errors that are the client's fault, mapped to the spec's codes. */
const fastifyCodes: Record<string, Omit<Mapped, 'message'> & { message?: string }> = {
  FST_ERR_CTP_BODY_TOO_LARGE: { status: 413, code: 'payload_too_large', message: 'Request body is too large.' },
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { status: 415, code: 'unsupported_media_type', message: 'Send application/json.' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { status: 400, code: 'validation_error' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { status: 400, code: 'validation_error', message: 'Request body is empty.' },
  FST_ERR_CTP_INVALID_JSON_BODY: { status: 400, code: 'validation_error', message: 'Request body is not valid JSON.' },
  // Raised by the router before any route runs (see `frameworkErrors` below).
  FST_ERR_BAD_URL: { status: 400, code: 'validation_error', message: 'The path is not a valid URL component.' },
  FST_ERR_MAX_PARAM_LENGTH: { status: 414, code: 'validation_error', message: 'A path segment is too long.' },
};

function describeValidation(err: FastifyError): string {
  const issues = (err.validation ?? []).slice(0, 5).map((v) => {
    const where = [err.validationContext, v.instancePath?.replace(/^\//, '').replaceAll('/', '.')]
      .filter(Boolean)
      .join('.');
    return `${where || 'request'}: ${v.message ?? 'is invalid'}`;
  });
  return issues.length ? issues.join('; ') : 'Request failed validation.';
}

export function mapError(err: unknown): Mapped & { level: LogLevel } {
  if (err instanceof AppError) {
    return { status: err.status, code: err.code, message: err.message, headers: err.headers, level: err.status >= 500 ? 'warn' : 'info' };
  }
  const fe = err as FastifyError;
  if (hasZodFastifySchemaValidationErrors(fe)) {
    return { status: 400, code: 'validation_error', message: describeValidation(fe), level: 'info' };
  }
  if (isResponseSerializationError(fe)) {
    return { status: 500, code: 'internal_error', message: 'Internal server error.', level: 'error' };
  }
  const known = fe?.code ? fastifyCodes[fe.code] : undefined;
  if (known) return { ...known, message: known.message ?? fe.message, level: 'info' };
  if (err instanceof SyntaxError && (fe.statusCode === 400 || (fe as { status?: number }).status === 400)) {
    return { status: 400, code: 'validation_error', message: 'Request body is not valid JSON.', level: 'info' };
  }
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status >= 400 && status < 500) {
    const code: ErrorCode =
      status === 404 ? 'not_found' : status === 405 ? 'method_not_allowed' : status === 429 ? 'rate_limited'
        : status === 413 ? 'payload_too_large' : status === 415 ? 'unsupported_media_type'
          : status === 401 ? 'unauthorized' : status === 403 ? 'forbidden' : 'validation_error';
    return { status, code, message: fe.message, level: 'info' };
  }
  return { status: 500, code: 'internal_error', message: 'Internal server error.', level: 'error' };
}

export function sendError(request: FastifyRequest, reply: FastifyReply, mapped: Mapped) {
  if (mapped.headers) reply.headers(mapped.headers);
  return reply
    .code(mapped.status)
    .type('application/json; charset=utf-8')
    .send({ error: { code: mapped.code, message: mapped.message, requestId: request.id } });
}

/**
 * Fastify's `frameworkErrors` option: errors the router raises before a route (and so before the error
 * handler) exists, such as an over-long or undecodable path segment, leave in the same envelope.
 */
export function frameworkErrors(err: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  return sendError(request, reply, mapError(err));
}

/** The one error handler: every failure leaves in the `{ error: { code, message, requestId } }` envelope. */
export const errorsPlugin = fp(async (app: FastifyInstance) => {
  app.setErrorHandler((err, request, reply) => {
    const mapped = mapError(err);
    if (mapped.level === 'error') request.log.error({ err }, 'request failed');
    else request.log[mapped.level]({ code: mapped.code, status: mapped.status }, mapped.message);
    return sendError(request, reply, mapped);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(request, reply, {
      status: 404,
      code: 'not_found',
      message: `No route ${request.method} ${request.url.split('?')[0]}.`,
    }),
  );
});
