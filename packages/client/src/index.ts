// The Cairn TypeScript client: typed calls of the REST API (types generated from its OpenAPI document,
// api.ts) and the flows around them: live ingest and memory writes that can be waited for, queries in
// the three modes, an idempotency key per call reused across its retries, retries of what is safe to
// retry, and one error type. No dependency: global fetch (Node 18+, browsers, Deno, Bun).
import type { components, paths } from './api.ts';

type Schemas = components['schemas'];
type Json<P extends keyof paths, M extends keyof paths[P], S extends number> = paths[P][M] extends {
  responses: { [K in S]: { content: { 'application/json': infer T } } };
}
  ? T
  : never;

export type Job = Schemas['Job'];
export type JobResponse = Json<'/v1/ingest/jobs/{jobId}', 'get', 200>;
export type UrlIngest = Omit<Schemas['UrlIngestRequestInput'], 'dryRun' | 'idempotencyKey'> & { idempotencyKey?: string };
export type FileIngest = Omit<Schemas['FileIngestRequestInput'], 'dryRun' | 'idempotencyKey' | 'contentBase64'> & {
  /** The file's bytes (encoded for you) or its base64 text. */
  bytes?: Uint8Array;
  contentBase64?: string;
  idempotencyKey?: string;
};
export type Plan = Schemas['IngestPlan'];
export type QueryOptions = Omit<Schemas['QueryRequestInput'], 'mode' | 'query' | 'idempotencyKey'> & { idempotencyKey?: string };
export type QueryResult = Json<'/v1/query', 'post', 200>;
export type MessagesInput = Omit<Schemas['MessagesCreateRequestInput'], 'idempotency_key'> & { idempotency_key?: string };
export type Receipt = Schemas['MessagesCreateReceipt'];
export type EventStatus = Schemas['EventStatus'];
export type MemoryContext = Schemas['MemoryContext'];
export type MessagePage = Schemas['PageMessage'];

/** An answer other than 2xx, in the service's error envelope; `retryable` says whether the same call may be sent again. */
export class CairnError extends Error {
  readonly status: number;
  readonly code: string;
  readonly requestId: string | undefined;
  constructor(status: number, code: string, message: string, requestId?: string) {
    super(message);
    this.name = 'CairnError';
    this.status = status;
    this.code = code;
    this.requestId = requestId;
  }
  get retryable(): boolean {
    return this.status === 429 || this.status >= 500 || this.code === 'operation_in_progress' || this.code === 'network_error';
  }
}

export type ClientOptions = {
  baseUrl: string;
  /** An API key (cairn_sk_...) or a CLI session token. */
  apiKey: string;
  /** Tries of one call when the answer is retryable (network, 429, 5xx, operation_in_progress); default 4. */
  retries?: number;
  /** Polling interval of `wait()`, growing to 2 s; default 250 ms. */
  pollMs?: number;
  fetch?: typeof fetch;
};

const TERMINAL_JOB = new Set(['succeeded', 'failed', 'quarantined']);
const TERMINAL_EVENT = new Set(['succeeded', 'failed', 'quarantined']);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const base64 = (bytes: Uint8Array) => {
  let text = '';
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(text);
};

type Call = <T>(method: string, path: string, body?: unknown) => Promise<{ status: number; body: T }>;
type Poll = <T>(read: () => Promise<T>, done: (t: T) => boolean, timeoutMs?: number) => Promise<T>;

/** The native-memory calls: labels, writes that can be waited for, context and messages. */
function memoryCalls(call: Call, poll: Poll) {
  const ws = (workspace = 'default') => `/v1/workspaces/${encodeURIComponent(workspace)}`;
  const events = {
    get: async (eventId: string, workspace?: string) => (await call<EventStatus>('GET', `${ws(workspace)}/events/${encodeURIComponent(eventId)}`)).body,
    wait: (eventId: string, workspace?: string, timeoutMs?: number) =>
      poll(() => events.get(eventId, workspace), (e) => TERMINAL_EVENT.has(e.status), timeoutMs),
  };

  return {
    /** Creates (or finds) a peer and a session label. */
    peer: async (id: string, workspace?: string) => (await call('POST', `${ws(workspace)}/peers`, { id })).body,
    session: async (id: string, workspace?: string) => (await call('POST', `${ws(workspace)}/sessions`, { id })).body,
    /** Adds messages to a session: the receipt, and `wait()` for the event's end (claims derived). */
    add: async (session: string, input: MessagesInput, workspace?: string) => {
      const { body } = await call<Receipt>('POST', `${ws(workspace)}/sessions/${encodeURIComponent(session)}/messages`, {
        ...input, idempotency_key: input.idempotency_key ?? crypto.randomUUID(),
      });
      return { receipt: body, wait: (timeoutMs?: number) => events.wait(body.event_id, workspace, timeoutMs) };
    },
    /** What memory holds about a peer: its claims and messages ranked for `q` (or its current context), as prompt-ready text. */
    context: async (peer: string, opts: { session?: string; q?: string } = {}, workspace?: string) => {
      const params = new URLSearchParams(Object.entries(opts).filter((e): e is [string, string] => Boolean(e[1])));
      const search = params.size ? `?${params}` : '';
      return (await call<MemoryContext>('GET', `${ws(workspace)}/peers/${encodeURIComponent(peer)}/context${search}`)).body;
    },
    /** One page of a session's messages in conversation order; pass `next_cursor` back for the next. */
    messages: async (session: string, page: { limit?: number; cursor?: string } = {}, workspace?: string) =>
      (await call<MessagePage>('POST', `${ws(workspace)}/sessions/${encodeURIComponent(session)}/messages/list`, page)).body,
    events,
  };
}

export function createClient(options: ClientOptions) {
  const doFetch = options.fetch ?? fetch;
  const tries = Math.max(1, options.retries ?? 4);
  const pollMs = options.pollMs ?? 250;
  let root = options.baseUrl;
  while (root.endsWith('/')) root = root.slice(0, -1);

  /** One call; retried with the same body (so the same idempotency key) while the answer is retryable. */
  async function call<T>(method: string, path: string, body?: unknown): Promise<{ status: number; body: T }> {
    for (let attempt = 1; ; attempt++) {
      let error: CairnError;
      let retryAfterMs = 0;
      try {
        const res = await doFetch(`${root}${path}`, {
          method,
          headers: { authorization: `Bearer ${options.apiKey}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        const text = await res.text();
        const parsed = text ? JSON.parse(text) : undefined;
        if (res.ok) return { status: res.status, body: parsed as T };
        const e = parsed?.error ?? {};
        error = new CairnError(res.status, e.code ?? `http_${res.status}`, e.message ?? res.statusText, e.requestId);
        retryAfterMs = Number(res.headers.get('retry-after') ?? 0) * 1000;
      } catch (err) {
        error = new CairnError(0, 'network_error', err instanceof Error ? err.message : String(err));
      }
      if (!error.retryable || attempt >= tries) throw error;
      await sleep(Math.max(retryAfterMs, 250 * 2 ** (attempt - 1)));
    }
  }

  /** Polls `read` until `done` says so; each wait grows to 2 s; `timeoutMs` (default 10 minutes) bounds it. */
  async function poll<T>(read: () => Promise<T>, done: (t: T) => boolean, timeoutMs = 600_000): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (let wait = pollMs; ; wait = Math.min(wait * 2, 2000)) {
      const value = await read();
      if (done(value)) return value;
      if (Date.now() > deadline) throw new CairnError(0, 'timeout', `Still not finished after ${timeoutMs} ms.`);
      await sleep(wait);
    }
  }

  const jobs = {
    get: async (jobId: string) => (await call<JobResponse>('GET', `/v1/ingest/jobs/${encodeURIComponent(jobId)}`)).body.job,
    /** The job once it has ended (succeeded, failed or quarantined). */
    wait: (jobId: string, timeoutMs?: number) => poll(() => jobs.get(jobId), (j) => TERMINAL_JOB.has(j.status), timeoutMs),
  };

  /** A live ingest (dated today unless `datedAt` says otherwise): the queued job, and `wait()` for its end. */
  async function ingestLive(path: string, body: Record<string, unknown>) {
    const { body: answer } = await call<{ job: Job }>('POST', path, {
      ...body, dryRun: false, datedAt: body.datedAt ?? new Date().toISOString().slice(0, 10), idempotencyKey: body.idempotencyKey ?? crypto.randomUUID(),
    });
    return { job: answer.job, wait: (timeoutMs?: number) => jobs.wait(answer.job.id, timeoutMs) };
  }
  const fileBody = ({ bytes, ...input }: FileIngest) => ({ ...input, contentBase64: input.contentBase64 ?? base64(bytes ?? new Uint8Array()) });

  const query = (mode: 'evidence' | 'context' | 'answer') => async (text: string, opts: QueryOptions = {}) =>
    (await call<QueryResult>('POST', '/v1/query', { ...opts, mode, query: text, idempotencyKey: opts.idempotencyKey ?? crypto.randomUUID() })).body;

  return {
    ingest: {
      /** Ingests a URL (a live job): `(await client.ingest.url({ url })).wait()`. */
      url: (input: UrlIngest) => ingestLive('/v1/ingest/url', { ...input }),
      file: (input: FileIngest) => ingestLive('/v1/ingest/file', fileBody(input)),
      /** Dry runs: what a live ingest would store and cost, nothing stored. */
      planUrl: async (input: UrlIngest) => (await call<{ plan: Plan }>('POST', '/v1/ingest/url', { ...input, dryRun: true })).body.plan,
      planFile: async (input: FileIngest) => (await call<{ plan: Plan }>('POST', '/v1/ingest/file', { ...fileBody(input), dryRun: true })).body.plan,
      jobs,
    },
    query: { evidence: query('evidence'), context: query('context'), answer: query('answer') },
    memory: memoryCalls(call, poll),
    /** Any other route, typed by its path, with the same retries and errors. */
    request: <T = unknown>(method: string, path: string, body?: unknown) => call<T>(method, path, body).then((r) => r.body),
  };
}

export type CairnClient = ReturnType<typeof createClient>;
