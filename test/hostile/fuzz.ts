import fc from 'fast-check';
import { expect } from 'vitest';
import { ApiClient, cliSignIn, createKey, createTestAccount, signIn, type Json } from '../helpers/accounts.ts';
import { createTestDatabase } from '../helpers/db.ts';
import { startMcpStack } from '../helpers/mcp.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { fromSchema, pathSegment, type JsonSchema } from '../helpers/arbitraries.ts';

// The shared machinery of the hostile-input suite: the route table read from the service's own
// OpenAPI document, a raw HTTP sender, and the checks every answer must pass.

export type Operation = {
  method: string;
  /** OpenAPI template, e.g. /v1/ingest/jobs/{jobId}. */
  path: string;
  pathParams: string[];
  query: { name: string; schema: JsonSchema }[];
  body: JsonSchema | null;
};

/** Routes whose success ends the caller's own credential: a fuzzer hitting them would sign itself out. */
export const SELF_ENDING = new Set(['DELETE /v1/auth/session', 'DELETE /v1/auth/cli/session', 'DELETE /v1/account']);

export function operations(doc: Json): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item as Record<string, Json>)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method)) continue;
      const params = (op.parameters ?? []) as Json[];
      ops.push({
        method: method.toUpperCase(),
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name as string),
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name as string, schema: p.schema })),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return ops;
}

export type Sent = { status: number; headers: Headers; text: string; json: Json };

export async function send(
  baseUrl: string,
  method: string,
  path: string,
  opts: { headers?: Record<string, string>; body?: unknown; raw?: string | Buffer } = {},
): Promise<Sent> {
  const headers: Record<string, string> = { ...opts.headers };
  let body: string | Buffer | undefined = opts.raw;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['content-type'] ??= 'application/json';
  }
  const res = await fetch(`${baseUrl}${path}`, { method, headers, body });
  const text = await res.text();
  let json: Json;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Every answer: never a 5xx, every 4xx in the spec's envelope, nothing injected into headers. */
export function checkAnswer(request: string, res: Sent): string | null {
  const what = request.length > 200 ? `${request.slice(0, 200)}…` : request;
  if (res.status >= 500) return `${what}: ${res.status} ${res.text.slice(0, 300)}`;
  if (res.status >= 400) {
    const e = res.json?.error;
    const ok =
      e && typeof e.code === 'string' && e.code.length > 0 && typeof e.message === 'string' && typeof e.requestId === 'string';
    if (!ok) return `${what}: ${res.status} without the error envelope: ${res.text.slice(0, 300)}`;
  }
  for (const [name, value] of res.headers) {
    if (/x-injected/i.test(name) || /[\r\n]/.test(value)) return `${what}: injected header ${name}: ${value}`;
  }
  return null;
}

/** A request built from an operation's schemas: path segments, query values and a body. */
export function requestArbitrary(op: Operation) {
  const params = fc.tuple(...op.pathParams.map(() => fc.tuple(pathSegment, fc.boolean())));
  const query = fc.record(Object.fromEntries(op.query.map((q) => [q.name, fromSchema(q.schema)])), { requiredKeys: [] });
  const body = op.body ? fromSchema(op.body) : fc.constant(undefined);
  return fc.tuple(params, query, body).map(([ps, q, b]) => {
    let path = op.path;
    op.pathParams.forEach((name, i) => {
      const [seg, raw] = ps[i]!;
      // Mostly encoded as a client library would; sometimes raw, so traversal reaches the router.
      path = path.replace(`{${name}}`, raw ? seg.replace(/[?#\s]/g, '_') : encodeURIComponent(seg));
    });
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(q)) search.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    const qs = search.toString();
    return { path: qs ? `${path}?${qs}` : path, body: b };
  });
}

/** Runs `runs` generated requests against one operation; returns the first failure found, if any. */
export async function fuzzOperation(
  baseUrl: string,
  op: Operation,
  headers: Record<string, string>,
  runs: number,
): Promise<string | null> {
  let failure: string | null = null;
  await fc
    .assert(
      fc.asyncProperty(requestArbitrary(op), async (req) => {
        const res = await send(baseUrl, op.method, req.path, {
          headers,
          ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { body: req.body ?? {} }),
        });
        const problem = checkAnswer(`${op.method} ${req.path} body=${JSON.stringify(req.body)?.slice(0, 200)}`, res);
        if (problem) throw new Error(problem);
      }),
      { numRuns: runs, seed: 20261123, endOnFailure: true },
    )
    .catch((err: Error) => {
      failure = describeFailure(`${op.method} ${op.path}`, err);
    });
  return failure;
}

/** fast-check's report names the counterexample; the cause says what the service answered. */
export function describeFailure(what: string, err: Error): string {
  const cause = err.cause instanceof Error ? err.cause.message : err.message;
  return `${what}: ${cause.slice(0, 600)}`;
}

/** Asserts a collected list of failures is empty, printing all of them when not. */
export function expectNoFailures(failures: string[]) {
  expect(failures, failures.join('\n\n')).toEqual([]);
}

export type Credentials = Record<'apiKey' | 'cli' | 'browser', Record<string, string>>;

/**
 * The service as the hostile suites attack it: a worker, the API and MCP listener, and one account
 * with every scope signed in three ways (API key, CLI token, browser session).
 */
export async function hostileStack() {
  const temporal = testTemporalClient();
  const db = await createTestDatabase();
  const taskQueue = uniqueTaskQueue();
  const worker = await startWorker({ orm: db.orm, taskQueue });
  const stack = await startMcpStack({ orm: db.orm, temporal, taskQueue });
  const client = new ApiClient(stack.baseUrl);
  const limit = 100_000;
  const account = await createTestAccount(db.orm, {
    monthlyCredits: limit, queryDailyLimit: limit, ingestDailyLimit: limit, queryMonthlyLimit: limit, ingestMonthlyLimit: limit,
  });
  const cookie = await signIn(client, account);
  const key = await createKey(client, { cookie }, { scopes: ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'] });
  const creds: Credentials = {
    apiKey: { authorization: `Bearer ${key.secret}` },
    cli: { authorization: `Bearer ${await cliSignIn(client, cookie)}` },
    browser: { cookie: `service_session=${cookie}`, 'x-service-csrf': '1', origin: stack.baseUrl },
  };
  const doc = (await send(stack.baseUrl, 'GET', '/openapi.json')).json;
  return {
    db, stack, creds, doc,
    async close() {
      await stack.close();
      await worker.stop();
      await temporal.close();
      await db.drop();
    },
  };
}
