// The console's only way to the service: the public HTTP routes, same origin, with the browser
// session cookie (sent by the browser) and the CSRF header on every write (spec 4.1, 4.2).

// Response bodies are the service's JSON; pages read the fields they show.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** A failed call, carrying the error envelope's code and message (spec 7). */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | undefined;
  constructor(status: number, code: string, message: string, requestId?: string) {
    super(message);
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
}

export type ApiResult = { status: number; body: Json; headers: Headers };

/** Called when a request finds the session gone (401), so the shell can show the sign-in page. */
let onSignedOut: () => void = () => {};
export const setSignedOutHandler = (fn: () => void) => {
  onSignedOut = fn;
};

export async function call(method: string, path: string, body?: unknown): Promise<ApiResult> {
  const headers: Record<string, string> = { accept: 'application/json' };
  if (method !== 'GET') headers['x-service-csrf'] = '1';
  if (body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      headers,
      credentials: 'same-origin',
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch {
    throw new ApiError(0, 'network_error', 'The service could not be reached. Check your connection and try again.');
  }
  const text = await res.text();
  let json: Json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  if (!res.ok) {
    const e = json?.error;
    const err = new ApiError(res.status, e?.code ?? 'http_error', e?.message ?? `The service answered ${res.status}.`, e?.requestId);
    if (res.status === 401 && !path.startsWith('/v1/auth/')) onSignedOut();
    throw err;
  }
  return { status: res.status, body: json, headers: res.headers };
}

export const get = async (path: string) => (await call('GET', path)).body;
export const post = async (path: string, body?: unknown) => (await call('POST', path, body)).body;
export const put = async (path: string, body?: unknown) => (await call('PUT', path, body)).body;
export const del = async (path: string, body?: unknown) => (await call('DELETE', path, body)).body;
