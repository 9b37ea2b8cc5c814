import { readFileSync } from 'node:fs';

// The one HTTP client of the `cairn` commands: JSON in and out, a bearer credential, and the error
// envelope of spec section 7 turned into an ApiError carrying the stable code.

// Response bodies are whatever the service returns; commands read the fields they render.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** The service answered with an error: status, the envelope's stable code, message and request id. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | null;
  readonly retryAfter: string | null;

  constructor(status: number, code: string, message: string, seen: { requestId: string | null; retryAfter: string | null }) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = seen.requestId;
    this.retryAfter = seen.retryAfter;
  }
}

/** No HTTP answer at all (connection refused, DNS, timeout). */
export class ServiceUnreachable extends Error {}

export type ApiResponse = { status: number; headers: Headers; body: Json };

type RequestOptions = { body?: unknown; query?: Record<string, string | number | undefined> };

/** Long enough for a 50 MB upload or an answer; a hung connection still ends. */
const REQUEST_TIMEOUT_MS = 300_000;
/** The package version (read here rather than imported from the API, which would load its whole stack). */
export const CLI_VERSION: string = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')).version;
const USER_AGENT = `cairn-cli/${CLI_VERSION}`;

function errorFrom(status: number, headers: Headers, text: string): ApiError {
  let envelope: Json;
  try {
    envelope = JSON.parse(text);
  } catch {
    envelope = null;
  }
  const e = envelope?.error;
  const retryAfter = headers.get('retry-after');
  if (e && typeof e.code === 'string') {
    return new ApiError(status, e.code, String(e.message ?? ''), { requestId: e.requestId ?? headers.get('x-request-id'), retryAfter });
  }
  // Not the service's envelope (a proxy in between, or the wrong address): say what came back.
  return new ApiError(status, `http_${status}`, text.slice(0, 200).trim() || `HTTP ${status}`, { requestId: headers.get('x-request-id'), retryAfter });
}

export type ApiClient = ReturnType<typeof apiClient>;

/** A client for one service address with one credential (or none, for the sign-in routes). */
export function apiClient(baseUrl: string, bearer: string | null) {
  async function request(method: string, path: string, opts: RequestOptions = {}): Promise<ApiResponse> {
    const url = new URL(`${baseUrl}${path}`);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const headers: Record<string, string> = { accept: 'application/json', 'user-agent': USER_AGENT };
    if (bearer) headers.authorization = `Bearer ${bearer}`;
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    let res: Response;
    try {
      res = await fetch(url, {
        method,
        headers,
        body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string; message?: string } }).cause;
      throw new ServiceUnreachable(`cannot reach the Cairn service at ${baseUrl}: ${cause?.code ?? cause?.message ?? (err as Error).message}`);
    }
    const text = await res.text();
    if (!res.ok) throw errorFrom(res.status, res.headers, text);
    let body: Json;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      throw new ApiError(res.status, 'invalid_response', `${baseUrl} did not answer with JSON; is it a Cairn service?`, { requestId: null, retryAfter: null });
    }
    return { status: res.status, headers: res.headers, body };
  }
  return {
    baseUrl,
    request,
    get: (path: string, query?: RequestOptions['query']) => request('GET', path, { query }),
    post: (path: string, body?: unknown) => request('POST', path, { body }),
    put: (path: string, body?: unknown) => request('PUT', path, { body }),
    delete: (path: string, body?: unknown) => request('DELETE', path, { body }),
  };
}
