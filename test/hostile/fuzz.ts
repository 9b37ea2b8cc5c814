import { randomBytes } from 'node:crypto';
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

// Isolation sweeps -----------------------------------------------------------------------------------
// A caller sends a protected party's identifiers in every slot of every route and tool; nothing of the
// party may come back. Used across accounts (cross-account.test.ts) and across audiences of one
// account (audience.test.ts).

/** A body for the schema with `value` in every id-like or label-like slot (fresh idempotency keys). */
export function bodyWith(schema: JsonSchema, value: string): unknown {
  if (!schema || typeof schema !== 'object') return value;
  if (Array.isArray(schema.anyOf)) return bodyWith(schema.anyOf[0], value);
  if (schema.const !== undefined) return schema.const;
  if (Array.isArray(schema.enum)) return schema.enum[0];
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === 'array') return [bodyWith(schema.items, value)];
  if (type === 'boolean') return false;
  if (type === 'integer' || type === 'number') return 1;
  if (type === 'string') return schema.format === 'uuid' && !/^[0-9a-f-]{36}$/.test(value) ? '00000000-0000-4000-8000-000000000000' : value;
  const props: Record<string, JsonSchema> = schema.properties ?? {};
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, /idempotency/i.test(k) ? `sweep-${randomBytes(6).toString('hex')}` : bodyWith(v, value)]));
}

/**
 * What of the protected party reached the caller. A value the caller itself sent may come back: in an
 * error message, or as the label of something the caller created with it (a peer named like the
 * party's id is the caller's own peer). Those echoes are collected and judged by `owns` (does a row of
 * the caller's mention the value?); anything else of the party's is a leak at once.
 */
export function leakDetector(secrets: readonly string[], owns: (value: string) => Promise<boolean>) {
  const echoes: { value: string; what: string }[] = [];
  return {
    leaks(res: Sent, sent: string, what: string): string[] {
      const found = secrets.filter((s) => res.text.includes(s));
      for (const s of found.filter((x) => sent.includes(x))) if (res.status < 300) echoes.push({ value: s, what });
      return found.filter((s) => !sent.includes(s));
    },
    /** Echoed values that are not the caller's own were the party's data returned to the caller. */
    async foreignEchoes(): Promise<string[]> {
      const out: string[] = [];
      for (const e of echoes) if (!(await owns(e.value))) out.push(`${e.what} returned the party's ${e.value}`);
      echoes.length = 0;
      return out;
    },
  };
}
export type LeakDetector = ReturnType<typeof leakDetector>;

/**
 * Every route of `ops` with each value in its path, text query and body slots, as each of
 * `credentials`; `fixed` path parameters keep the given value (the workspace `default`, say). Routes
 * whose path is complete without a value are also asked once plainly (an empty body): listings show
 * what the caller reaches.
 */
export async function sweepRoutes(
  baseUrl: string,
  ops: Operation[],
  values: readonly string[],
  credentials: Record<string, string>[],
  detector: LeakDetector,
  fixed: Record<string, string> = {},
): Promise<{ failures: string[]; calls: number }> {
  const failures: string[] = [];
  let calls = 0;
  for (const op of ops) {
    const free = op.pathParams.filter((p) => !(p in fixed));
    const textQuery = op.query.filter((q) => isText(q.schema)).map((q) => q.name);
    const requests: { value: string; path: string; body: unknown }[] = [];
    const pathWith = (value: string) => op.pathParams.reduce((path, p) => path.replace(`{${p}}`, encodeURIComponent(fixed[p] ?? value)), op.path);
    if (free.length || op.body || textQuery.length) {
      for (const value of values) {
        const search = new URLSearchParams(textQuery.map((name) => [name, value]));
        requests.push({ value, path: `${pathWith(value)}${search.size ? `?${search}` : ''}`, body: op.body ? bodyWith(op.body, value) : undefined });
      }
    }
    if (!free.length) requests.push({ value: '(none)', path: pathWith(''), body: ['GET', 'DELETE'].includes(op.method) ? undefined : {} });
    for (const { value, path, body } of requests) {
      for (const headers of credentials) {
        const res = await send(baseUrl, op.method, path, body === undefined ? { headers } : { headers, body });
        calls++;
        const problem = checkAnswer(`${op.method} ${path}`, res);
        if (problem) failures.push(problem);
        const leaked = detector.leaks(res, `${path} ${JSON.stringify(body)}`, `${op.method} ${path}`);
        if (leaked.length) failures.push(`${op.method} ${path} (${value}) received ${leaked.join(', ')}: ${res.text.slice(0, 300)}`);
        // Checked at once: a later call of the sweep may delete what the caller just created with the value.
        failures.push(...(await detector.foreignEchoes()));
      }
    }
  }
  return { failures, calls };
}

const isText = (schema: JsonSchema) => schema?.type === 'string' && schema.format === undefined;

/** Every MCP tool with each value in every argument slot, and with none; the failures found. */
export async function sweepTools(mcpUrl: string, bearer: string, values: readonly string[], detector: LeakDetector): Promise<string[]> {
  const headers = { authorization: `Bearer ${bearer}`, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  const base = mcpUrl.replace(/\/$/, '');
  let rpc = 1;
  const list = await send(base, 'POST', '/', { headers, body: { jsonrpc: '2.0', id: rpc++, method: 'tools/list', params: {} } });
  const tools = list.json.result.tools as { name: string; inputSchema: Json }[];
  const failures: string[] = [];
  for (const tool of tools) {
    // Each value in every slot, then no arguments at all (a listing shows what the caller reaches).
    for (const value of [...values, null]) {
      const args = value === null ? {} : bodyWith(tool.inputSchema, value);
      const res = await send(base, 'POST', '/', { headers, body: { jsonrpc: '2.0', id: rpc++, method: 'tools/call', params: { name: tool.name, arguments: args } } });
      const problem = checkAnswer(`tool ${tool.name}`, res);
      if (problem) failures.push(problem);
      const leaked = detector.leaks(res, JSON.stringify(args), `tool ${tool.name}`);
      if (leaked.length) failures.push(`tool ${tool.name} (${value}) received ${leaked.join(', ')}: ${res.text.slice(0, 300)}`);
      failures.push(...(await detector.foreignEchoes()));
    }
  }
  return failures;
}
