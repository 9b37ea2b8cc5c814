import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Json } from '../helpers/accounts.ts';
import { fromSchema } from '../helpers/arbitraries.ts';
import type { McpStack } from '../helpers/mcp.ts';
import {
  checkAnswer, describeFailure, expectNoFailures, fuzzOperation, hostileStack, operations, send, SELF_ENDING, type Credentials, type Operation,
} from './fuzz.ts';

// Hostile input (issue 10): property-based requests against every route of the OpenAPI document and
// every MCP tool, with arguments derived from their own schemas, as each kind of credential. Whatever
// arrives, the service answers without a 5xx, every 4xx carries the spec's error envelope, and no
// header echoes attacker text. Then the classic malformed bodies: oversized, deeply nested, invalid
// UTF-8, header injection.

const RUNS = 25;

let hostile: Awaited<ReturnType<typeof hostileStack>>;
let stack: McpStack;
let ops: Operation[];
let creds: Credentials;

beforeAll(async () => {
  hostile = await hostileStack();
  ({ stack, creds } = hostile);
  ops = operations(hostile.doc).filter((op) => !SELF_ENDING.has(`${op.method} ${op.path}`));
}, 180_000);

afterAll(async () => {
  await hostile?.close();
});

describe('every route, generated requests', () => {
  it('reads the route table from the OpenAPI document', () => {
    const names = ops.map((o) => `${o.method} ${o.path}`);
    expect(names).toEqual(expect.arrayContaining(['POST /v1/ingest/file', 'POST /v1/account/api-keys', 'GET /v1/ingest/jobs/{jobId}']));
  });

  for (const kind of ['apiKey', 'cli', 'browser'] as const) {
    it(`answers ${kind} requests without a 5xx and with the envelope on every 4xx`, async () => {
      const failures: string[] = [];
      for (const op of ops) {
        const failure = await fuzzOperation(stack.baseUrl, op, creds[kind], RUNS);
        if (failure) failures.push(failure);
      }
      expectNoFailures(failures);
    }, 600_000);
  }

  it('answers anonymous requests the same way', async () => {
    const failures: string[] = [];
    for (const op of ops) {
      const failure = await fuzzOperation(stack.baseUrl, op, {}, 5);
      if (failure) failures.push(failure);
    }
    expectNoFailures(failures);
  }, 600_000);
});

describe('every MCP tool, generated arguments', () => {
  const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  let rpc = 1;
  const call = (method: string, params: Json) =>
    send(stack.mcpUrl.replace(/\/$/, ''), 'POST', '/', {
      headers: { ...MCP_HEADERS, ...creds.apiKey },
      body: { jsonrpc: '2.0', id: rpc++, method, params },
    });

  it('returns a JSON-RPC result or error, never a 5xx, for any arguments', async () => {
    const list = await call('tools/list', {});
    expect(list.status).toBe(200);
    const tools = list.json.result.tools as { name: string; inputSchema: Json }[];
    const failures: string[] = [];
    for (const tool of tools) {
      await fc
        .assert(
          fc.asyncProperty(fromSchema(tool.inputSchema), async (args) => {
            const res = await call('tools/call', { name: tool.name, arguments: args });
            const what = `tools/call ${tool.name} ${JSON.stringify(args)?.slice(0, 200)}`;
            const problem = checkAnswer(what, res);
            if (problem) throw new Error(problem);
            if (res.status === 200 && !(res.json?.result || res.json?.error)) throw new Error(`${what}: no result or error`);
          }),
          { numRuns: RUNS, seed: 20261123, endOnFailure: true },
        )
        .catch((err: Error) => failures.push(describeFailure(`tools/call ${tool.name}`, err)));
    }
    expectNoFailures(failures);
  }, 600_000);
});

describe('malformed bodies', () => {
  const withKey = (extra: Record<string, string> = {}) => ({ ...creds.apiKey, 'content-type': 'application/json', ...extra });

  it('refuses a body over the limit with 413 in the envelope', async () => {
    const raw = JSON.stringify({ url: `http://example.com/${'a'.repeat(2_000_000)}` });
    const res = await send(stack.baseUrl, 'POST', '/v1/ingest/url', { headers: withKey(), raw });
    expect(res.status).toBe(413);
    expect(checkAnswer('oversized', res)).toBeNull();
  });

  it('answers deeply nested JSON with a 4xx, not a crash', async () => {
    for (const raw of ['['.repeat(200_000) + ']'.repeat(200_000), `{"url":${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}}`]) {
      const res = await send(stack.baseUrl, 'POST', '/v1/ingest/url', { headers: withKey(), raw });
      expect(res.status).toBeGreaterThanOrEqual(400);
      expect(res.status).toBeLessThan(500);
      expect(checkAnswer('nested', res)).toBeNull();
    }
    expect((await send(stack.baseUrl, 'GET', '/healthz')).status).toBe(200);
  });

  it('answers invalid UTF-8 with a 4xx in the envelope', async () => {
    const raw = Buffer.concat([Buffer.from('{"url":"http://example.com/'), Buffer.from([0xff, 0xfe, 0xc3, 0x28]), Buffer.from('"}')]);
    const res = await send(stack.baseUrl, 'POST', '/v1/ingest/url', { headers: withKey(), raw });
    expect(res.status).toBeGreaterThanOrEqual(400);
    expect(res.status).toBeLessThan(500);
    expect(checkAnswer('utf8', res)).toBeNull();
  });

  it('never echoes a hostile request id or a header-shaped value', async () => {
    const res = await send(stack.baseUrl, 'GET', '/v1/ingest/jobs', { headers: { ...creds.apiKey, 'x-request-id': 'a"b<script>%0d%0aX-Injected:1' } });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    const key = await send(stack.baseUrl, 'POST', '/v1/ingest/url', {
      headers: creds.apiKey,
      body: { url: 'http://example.com/', dryRun: false, datedAt: '2026-01-01', idempotencyKey: 'x\r\nX-Injected: 1' },
    });
    expect(checkAnswer('idempotency key', key)).toBeNull();
  });

  it('answers the wrong media type with 415 in the envelope', async () => {
    const res = await send(stack.baseUrl, 'POST', '/v1/ingest/url', {
      headers: { ...creds.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      raw: 'url=http://x',
    });
    expect(res.status).toBe(415);
    expect(checkAnswer('media type', res)).toBeNull();
  });
});
