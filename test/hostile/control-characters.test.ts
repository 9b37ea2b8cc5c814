import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../helpers/accounts.ts';
import { controlCharacter, validFromSchema, type JsonSchema } from '../helpers/arbitraries.ts';
import type { TestDatabase } from '../helpers/db.ts';
import type { McpStack } from '../helpers/mcp.ts';
import { checkAnswer, describeFailure, expectNoFailures, hostileStack, send, SELF_ENDING, type Credentials } from './fuzz.ts';

// No 5xx from input (issue 24): NUL, the other C0 controls, DEL, C1 controls (U+0085), bidirectional
// overrides and isolates (U+202E) and unpaired surrogates put into any
// string of a request otherwise shaped like its schema (path parameters, query, body) get 400
// validation_error on every route, and a validation_error tool error on every MCP tool. A U+0000 in a
// filename, an idempotency key or a query once answered 500 (PostgreSQL refuses NUL in text).

const RUNS = 25;

let hostile: Awaited<ReturnType<typeof hostileStack>>;
let db: TestDatabase;
let stack: McpStack;
let doc: Json;
let creds: Credentials;

beforeAll(async () => {
  hostile = await hostileStack();
  ({ db, stack, doc, creds } = hostile);
}, 180_000);

afterAll(async () => {
  await hostile?.close();
});

type Slot = { where: 'path' | 'query' | 'body'; path: (string | number)[] };

/** Every string in a value, by its path. */
function stringSlots(value: unknown, path: (string | number)[] = []): (string | number)[][] {
  if (typeof value === 'string') return [path];
  if (Array.isArray(value)) return value.flatMap((v, i) => stringSlots(v, [...path, i]));
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => stringSlots(v, [...path, k]));
  return [];
}

/**
 * `bad` put inside the string at `path`. Inside, not at an end: fields that trim whitespace drop a
 * vertical tab or form feed at an end before anything stores it (stored safely, as the issue allows);
 * inside a string they stay, and are refused. Too short to have an inside, the string gets a NUL.
 */
function inject(value: unknown, path: (string | number)[], bad: string, at: number): unknown {
  if (path.length === 0) {
    const s = value as string;
    if (s.length < 2) return s + (bad.trim() === '' ? '\u0000' : bad);
    const i = 1 + (at % (s.length - 1));
    return s.slice(0, i) + bad + s.slice(i);
  }
  const [head, ...rest] = path;
  const copy = (Array.isArray(value) ? [...value] : { ...(value as object) }) as Record<string | number, unknown>;
  copy[head!] = inject(copy[head!], rest, bad, at);
  return copy;
}

type Op = { method: string; path: string; params: [string, JsonSchema][]; query: [string, JsonSchema][]; body: JsonSchema | null };

function ops(): Op[] {
  const out: Op[] = [];
  for (const [path, item] of Object.entries(doc.paths as Record<string, Json>)) {
    for (const [method, op] of Object.entries(item as Record<string, Json>)) {
      if (!['get', 'post', 'put', 'patch', 'delete'].includes(method) || SELF_ENDING.has(`${method.toUpperCase()} ${path}`)) continue;
      const params = (op.parameters ?? []) as Json[];
      out.push({
        method: method.toUpperCase(),
        path,
        params: params.filter((p) => p.in === 'path').map((p) => [p.name, p.schema]),
        query: params.filter((p) => p.in === 'query').map((p) => [p.name, p.schema]),
        body: op.requestBody?.content?.['application/json']?.schema ?? null,
      });
    }
  }
  return out;
}

const WITH_STRINGS = (op: Op) => op.params.length > 0 || op.query.length > 0 || op.body !== null;

/** A request shaped like the operation's schemas with one string made hostile; null when it has no string. */
function hostileRequest(op: Op) {
  const parts = fc.record({
    path: fc.record(Object.fromEntries(op.params.map(([n, s]) => [n, validFromSchema(s, doc).map(String)]))),
    query: fc.record(Object.fromEntries(op.query.map(([n, s]) => [n, validFromSchema(s, doc)])), { requiredKeys: [] }),
    body: op.body ? validFromSchema(op.body, doc) : fc.constant(undefined),
  });
  return fc.tuple(parts, fc.nat(), controlCharacter, fc.nat(40)).map(([p, pick, bad, at]) => {
    const slots = slotsOf(p);
    if (slots.length === 0) return null;
    const slot = slots[pick % slots.length]!;
    // A URL cannot carry an unpaired surrogate (it is bytes: clients send U+FFFD or invalid UTF-8, which
    // the router refuses); JSON bodies can ("\ud800"). URL parts get a control character instead.
    const char = slot.where === 'body' || !/[\ud800-\udfff]/.test(bad) ? bad : '\u0000';
    const hostile = { ...p, [slot.where]: inject(p[slot.where], slot.path, char, at) };
    let url = op.path;
    for (const [name, v] of Object.entries(hostile.path as Record<string, string>)) url = url.replace(`{${name}}`, encodeURIComponent(v));
    const search = new URLSearchParams();
    for (const [k, v] of Object.entries(hostile.query as Record<string, unknown>)) search.set(k, typeof v === 'string' ? v : JSON.stringify(v));
    const qs = search.toString();
    return { url: qs ? `${url}?${qs}` : url, body: hostile.body, slot };
  });
}

function slotsOf(p: { path: unknown; query: unknown; body: unknown }): Slot[] {
  return (['path', 'query', 'body'] as const).flatMap((where) => stringSlots(p[where]).map((path) => ({ where, path })));
}

describe('control characters and unpaired surrogates', () => {
  it('the issue\'s cases: NUL in a filename, an idempotency key or a query is 400 validation_error and stores nothing', async () => {
    const key = creds.apiKey;
    const file = await send(stack.baseUrl, 'POST', '/v1/ingest/file', {
      headers: key,
      body: { filename: 'a\u0000b.md', contentType: 'text/markdown', contentBase64: Buffer.from('# Hi').toString('base64'), dryRun: false, datedAt: '2026-01-01', idempotencyKey: `k-${randomUUID()}` },
    });
    expect([file.status, file.json?.error?.code]).toEqual([400, 'validation_error']);
    expect(file.json.error.message).toMatch(/filename/);
    const idem = await send(stack.baseUrl, 'POST', '/v1/ingest/file', {
      headers: key,
      body: { filename: 'a.md', contentType: 'text/markdown', contentBase64: Buffer.from('# Hi').toString('base64'), dryRun: false, datedAt: '2026-01-01', idempotencyKey: `k-\u0000-${randomUUID()}` },
    });
    expect([idem.status, idem.json?.error?.code]).toEqual([400, 'validation_error']);
    const query = await send(stack.baseUrl, 'POST', '/v1/query', { headers: key, body: { mode: 'evidence', query: 'what\u0000is', idempotencyKey: `q-${randomUUID()}` } });
    expect([query.status, query.json?.error?.code]).toEqual([400, 'validation_error']);
    const lone = await send(stack.baseUrl, 'POST', '/v1/query', { headers: key, body: { mode: 'evidence', query: 'what \ud800 is', idempotencyKey: `q-${randomUUID()}` } });
    expect([lone.status, lone.json?.error?.code]).toEqual([400, 'validation_error']);
    expect(await db.orm.em.fork().getConnection().execute('select id from ingest_job')).toEqual([]);
  });

  it('in any string of any route: 400 validation_error, never a 5xx', async () => {
    const failures: string[] = [];
    let checked = 0;
    for (const op of ops().filter(WITH_STRINGS)) {
      await fc
        .assert(
          fc.asyncProperty(hostileRequest(op), async (req) => {
            if (!req) return; // only optional parameters, none drawn this time
            const what = `${op.method} ${req.url} ${req.slot.where}:${req.slot.path.join('.')} body=${JSON.stringify(req.body)?.slice(0, 200)}`;
            let res;
            // The first credential the route accepts (API key, CLI token or browser session).
            for (const headers of [creds.apiKey, creds.cli, creds.browser]) {
              res = await send(stack.baseUrl, op.method, req.url, { headers, ...(op.method === 'GET' || op.method === 'DELETE' ? {} : { body: req.body ?? {} }) });
              if (res.status !== 401 && res.status !== 403) break;
            }
            const problem = checkAnswer(what, res!);
            if (problem) throw new Error(problem);
            if (res!.status === 401 || res!.status === 403) return; // a route no credential kind here may call (OAuth clients)
            if (res!.status !== 400 || res!.json?.error?.code !== 'validation_error') {
              throw new Error(`${what}: ${res!.status} ${res!.text.slice(0, 300)}`);
            }
            checked++;
          }),
          { numRuns: RUNS, seed: 20261124, endOnFailure: true },
        )
        .catch((err: Error) => failures.push(describeFailure(`${op.method} ${op.path}`, err)));
    }
    expectNoFailures(failures);
    expect(checked).toBeGreaterThan(ops().filter(WITH_STRINGS).length * RUNS * 0.8);
  }, 600_000);

  it('in any string argument of any MCP tool: a validation_error tool error', async () => {
    const headers = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', ...creds.apiKey };
    let rpc = 1;
    const call = (method: string, params: Json) => send(stack.mcpUrl.replace(/\/$/, ''), 'POST', '/', { headers, body: { jsonrpc: '2.0', id: rpc++, method, params } });
    const tools = (await call('tools/list', {})).json.result.tools as { name: string; inputSchema: Json }[];
    const failures: string[] = [];
    for (const tool of tools) {
      const args = fc.tuple(validFromSchema(tool.inputSchema), fc.nat(), controlCharacter, fc.nat(40)).map(([a, pick, bad, at]) => {
        const slots = stringSlots(a);
        return slots.length ? inject(a, slots[pick % slots.length]!, bad, at) : null;
      });
      await fc
        .assert(
          fc.asyncProperty(args, async (a) => {
            if (a === null) return; // no string argument drawn this time
            const res = await call('tools/call', { name: tool.name, arguments: a });
            const what = `tools/call ${tool.name} ${JSON.stringify(a)?.slice(0, 200)}`;
            const problem = checkAnswer(what, res);
            if (problem) throw new Error(problem);
            const result = res.json?.result;
            // The SDK refuses arguments its schema rejects before the tool runs; otherwise the tool's own check.
            const refused = result?.isError === true && (result.structuredContent?.error?.code === 'validation_error' || /validation/i.test(result.content?.[0]?.text ?? ''));
            if (!refused && !res.json?.error) throw new Error(`${what}: not refused: ${res.text.slice(0, 300)}`);
          }),
          { numRuns: RUNS, seed: 20261124, endOnFailure: true },
        )
        .catch((err: Error) => failures.push(describeFailure(`tools/call ${tool.name}`, err)));
    }
    expectNoFailures(failures);
  }, 600_000);
});
