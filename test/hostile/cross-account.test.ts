import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accountSnapshot, accountTables, ApiClient, cliSignIn, createKey, createTestAccount, eventually, signIn, sqlClient, type Json, type Sql,
} from '../helpers/accounts.ts';
import type { JsonSchema } from '../helpers/arbitraries.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { checkAnswer, expectNoFailures, operations, send, SELF_ENDING, type Operation, type Sent } from './fuzz.ts';

// Account isolation sweep (issue 10): account A owns real data (an ingested source, keys, native
// memory with a derived claim, a query's citation); account B, with every scope and every kind of
// credential, calls every route of the OpenAPI document and every MCP tool with A's identifiers in the
// path and the body. Nothing of A may come back (no id, no text, no email) and nothing of A may change:
// every row of A's, in every table that has an account_id, is byte-for-byte the same afterwards.

const ALL_SCOPES = ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'];
const CANARY = `zebracanary${randomBytes(4).toString('hex')}`;

let db: TestDatabase;
let sql: Sql;
let stack: McpStack;
let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
let taskQueue: string;
let client: ApiClient;
let ops: Operation[];
const temporal = testTemporalClient();
const generous = {
  monthlyCredits: 10_000,
  queryDailyLimit: 10_000,
  ingestDailyLimit: 10_000,
  queryMonthlyLimit: 10_000,
  ingestMonthlyLimit: 10_000,
};

type Party = { id: string; email: string; key: string; cli: string; cookie: string };
let a: Party;
let b: Party;
/** Identifiers and labels of A's, tried in every slot of B's requests. */
const aValues: string[] = [];
/** What must never appear in anything B receives. */
const aSecrets: string[] = [];

async function party(): Promise<Party> {
  const account = await createTestAccount(db.orm, generous);
  const cookie = await signIn(client, account);
  const key = await createKey(client, { cookie }, { scopes: ALL_SCOPES });
  return { id: account.id, email: account.email, key: key.secret, cli: await cliSignIn(client, cookie), cookie };
}

/** Every id A owns, from every table that has one. */
async function ownedIds(accountId: string): Promise<string[]> {
  const ids: string[] = [];
  for (const t of await accountTables(sql)) {
    const hasId = await sql.count(`select 1 from information_schema.columns where table_name = $1 and column_name = 'id'`, [t]);
    if (!hasId) continue;
    const rows = await sql.query<{ id: string }>(`select id::text as id from "${t}" where account_id = $1`, [accountId]);
    // Only opaque ids identify A; small serial numbers (ledger rows) appear in anyone's answers.
    ids.push(...rows.map((r) => r.id).filter((id) => /^[0-9a-f]{8}-[0-9a-f]{4}-/.test(id)));
  }
  return ids;
}

const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  taskQueue = uniqueTaskQueue();
  worker = await startWorker({ orm: db.orm, taskQueue });
  stack = await startMcpStack({ orm: db.orm, temporal, taskQueue });
  client = new ApiClient(stack.baseUrl);
  a = await party();
  b = await party();

  // A's source: a live file ingest that runs to the end.
  const text = `The ${CANARY} project ships on 3 March 2026.\n\nIts owner is Dana Whitfield, who lives in Lisbon.`;
  const ingest = await send(stack.baseUrl, 'POST', '/v1/ingest/file', {
    headers: bearer(a.key),
    body: {
      filename: 'a.txt',
      contentType: 'text/plain',
      contentBase64: Buffer.from(text).toString('base64'),
      dryRun: false,
      datedAt: '2026-11-01',
      idempotencyKey: `a-ingest-${CANARY}`,
    },
  });
  expect(ingest.status, ingest.text).toBe(202);
  const jobId = ingest.json.job.id as string;
  await eventually(async () => (await send(stack.baseUrl, 'GET', `/v1/ingest/jobs/${jobId}`, { headers: bearer(a.key) })).json?.job?.status === 'succeeded', 'A ingest', 60_000);

  // A's native memory (a message with the canary and the claim derived from it) and a query of A's.
  const memory = (method: string, path: string, body?: unknown) =>
    send(stack.baseUrl, method, `/v1/workspaces/default${path}`, body === undefined ? { headers: bearer(a.key) } : { headers: bearer(a.key), body });
  expect((await memory('POST', '/peers', { id: `peer-${CANARY}` })).status).toBe(200);
  expect((await memory('POST', '/sessions', { id: `session-${CANARY}` })).status).toBe(200);
  const write = await memory('POST', `/sessions/session-${CANARY}/messages`, {
    peer_id: `peer-${CANARY}`,
    messages: [{ role: 'user', content: `I moved to Lisbon in 2019 and my project is called ${CANARY}.` }],
  });
  expect(write.status, write.text).toBe(200);
  await eventually(async () => (await memory('GET', `/events/${write.json.event_id}`)).json?.status === 'succeeded', 'A memory event', 60_000);
  const q = await send(stack.baseUrl, 'POST', '/v1/query', {
    headers: bearer(a.key),
    body: { idempotencyKey: `a-query-${CANARY}`, mode: 'evidence', query: `${CANARY} Lisbon` },
  });
  expect(q.status, q.text).toBe(200);
  const handles = (q.json.evidence as { citationHandle: string }[]).map((e) => e.citationHandle);
  expect(handles.length).toBeGreaterThan(0);

  aValues.push(...(await ownedIds(a.id)), 'default', `peer-${CANARY}`, `session-${CANARY}`, ...handles.slice(0, 2));
  aSecrets.push(CANARY, a.email, ...(await ownedIds(a.id)));
  // The sweeps run with no worker: what B queues (ingest jobs, memory events) waits, so an echo of a
  // value B used stays attributable to B's own rows (a processed deletion would scrub B's label before
  // the echo check). The last test processes all of it and checks A again.
  await worker.stop();
  worker = undefined;
}, 180_000);

afterAll(async () => {
  await stack?.close();
  await worker?.stop();
  await temporal.close();
  await sql?.close();
  await db?.drop();
});

/** A body for the schema with A's values in every id-like or label-like slot. */
function bodyWith(schema: JsonSchema, value: string): unknown {
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
  return Object.fromEntries(Object.entries(props).map(([k, v]) => [k, /idempotency/i.test(k) ? `b-${randomBytes(6).toString('hex')}` : bodyWith(v, value)]));
}

/**
 * What of A's reached B. A value B itself sent may come back: in an error message, or as the label of
 * something B created with it (a peer named like A's id is B's own peer). Those echoes are collected and
 * checked after the sweep against B's own rows; anything else of A's is a leak at once.
 */
const echoes: { value: string; what: string }[] = [];
function leaks(res: Sent, sent: string, what: string): string[] {
  const found = aSecrets.filter((s) => res.text.includes(s));
  for (const s of found.filter((x) => sent.includes(x))) if (res.status < 300) echoes.push({ value: s, what });
  return found.filter((s) => !sent.includes(s));
}

/** Echoed values that are not B's own (no row of B's mentions them) were A's data returned to B. */
async function foreignEchoes(accountId: string): Promise<string[]> {
  const out: string[] = [];
  for (const e of echoes) {
    let owned = false;
    for (const t of await accountTables(sql)) {
      if (await sql.count(`select 1 from "${t}" x where account_id = $1 and strpos(x::text, $2) > 0`, [accountId, e.value])) {
        owned = true;
        break;
      }
    }
    if (!owned) out.push(`${e.what} returned A's ${e.value}`);
  }
  echoes.length = 0;
  return out;
}

describe("account B against account A's identifiers", () => {
  it("detects A's data when A itself asks (the sweep's detector works)", async () => {
    const own = await send(stack.baseUrl, 'GET', '/v1/ingest/jobs', { headers: bearer(a.key) });
    expect(own.status).toBe(200);
    expect(leaks(own, '', 'A').length).toBeGreaterThan(0);
  });

  it('gets nothing of A and changes nothing of A through any route', async () => {
    const doc = await send(stack.baseUrl, 'GET', '/openapi.json');
    ops = operations(doc.json).filter((op) => !SELF_ENDING.has(`${op.method} ${op.path}`));
    const before = await accountSnapshot(sql, a.id);
    const failures: string[] = [];
    const asB = [bearer(b.key), bearer(b.cli), { cookie: `service_session=${b.cookie}`, 'x-service-csrf': '1', origin: stack.baseUrl }];
    let calls = 0;
    for (const op of ops) {
      for (const value of aValues) {
        let path = op.path;
        for (const p of op.pathParams) path = path.replace(`{${p}}`, encodeURIComponent(value));
        if (!op.pathParams.length && !op.body) continue;
        for (const headers of asB) {
          const body = op.body ? bodyWith(op.body, value) : undefined;
          const res = await send(stack.baseUrl, op.method, path, body === undefined ? { headers } : { headers, body });
          calls++;
          const problem = checkAnswer(`B ${op.method} ${path}`, res);
          if (problem) failures.push(problem);
          const leaked = leaks(res, `${path} ${JSON.stringify(body)}`, `B ${op.method} ${path}`);
          if (leaked.length) failures.push(`B ${op.method} ${path} (${value}) received A's ${leaked.join(', ')}: ${res.text.slice(0, 300)}`);
          // Checked at once: a later call of the sweep may delete what B just created with the value.
          failures.push(...(await foreignEchoes(b.id)));
        }
      }
    }
    expect(calls).toBeGreaterThan(100);
    expectNoFailures(failures);
    expect(await accountSnapshot(sql, a.id)).toEqual(before);
  }, 900_000);

  it("gets nothing of A and changes nothing of A through any MCP tool", async () => {
    const before = await accountSnapshot(sql, a.id);
    const headers = { ...bearer(b.key), accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const mcpBase = stack.mcpUrl.replace(/\/$/, '');
    let rpc = 1;
    const list = await send(mcpBase, 'POST', '/', { headers, body: { jsonrpc: '2.0', id: rpc++, method: 'tools/list', params: {} } });
    const tools = list.json.result.tools as { name: string; inputSchema: Json }[];
    const failures: string[] = [];
    for (const tool of tools) {
      for (const value of aValues) {
        const args = bodyWith(tool.inputSchema, value);
        const res = await send(mcpBase, 'POST', '/', { headers, body: { jsonrpc: '2.0', id: rpc++, method: 'tools/call', params: { name: tool.name, arguments: args } } });
        const problem = checkAnswer(`B tool ${tool.name}`, res);
        if (problem) failures.push(problem);
        const leaked = leaks(res, JSON.stringify(args), `B tool ${tool.name}`);
        if (leaked.length) failures.push(`B tool ${tool.name} (${value}) received A's ${leaked.join(', ')}: ${res.text.slice(0, 300)}`);
        failures.push(...(await foreignEchoes(b.id)));
      }
    }
    expectNoFailures(failures);
    expect(await accountSnapshot(sql, a.id)).toEqual(before);
  }, 600_000);

  it("B's queued work, once a worker has processed it, changed nothing of A", async () => {
    const before = await accountSnapshot(sql, a.id);
    const unfinished = () => sql.count(
      `select 1 from memory_event where status in ('queued', 'running')
       union all select 1 from ingest_job where status not in ('succeeded', 'failed', 'quarantined')`, []);
    expect(await unfinished()).toBeGreaterThan(0);
    worker = await startWorker({ orm: db.orm, taskQueue });
    await eventually(async () => (await unfinished()) === 0, "B's queued work", 120_000);
    expect(await accountSnapshot(sql, a.id)).toEqual(before);
  }, 180_000);
});
