import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  accountSnapshot, accountTables, ApiClient, cliSignIn, createKey, createTestAccount, eventually, signIn, sqlClient, type Sql,
} from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { expectNoFailures, leakDetector, operations, send, SELF_ENDING, sweepRoutes, sweepTools, type Operation } from './fuzz.ts';

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

/** Whether a row of B's, in any table with an account_id, mentions the value (then B made it). */
async function ownedByB(value: string): Promise<boolean> {
  for (const t of await accountTables(sql)) {
    if (await sql.count(`select 1 from "${t}" x where account_id = $1 and strpos(x::text, $2) > 0`, [b.id, value])) return true;
  }
  return false;
}
const detector = leakDetector(aSecrets, ownedByB);

describe("account B against account A's identifiers", () => {
  it("detects A's data when A itself asks (the sweep's detector works)", async () => {
    const own = await send(stack.baseUrl, 'GET', '/v1/ingest/jobs', { headers: bearer(a.key) });
    expect(own.status).toBe(200);
    expect(detector.leaks(own, '', 'A').length).toBeGreaterThan(0);
  });

  it('gets nothing of A and changes nothing of A through any route', async () => {
    const doc = await send(stack.baseUrl, 'GET', '/openapi.json');
    ops = operations(doc.json).filter((op) => !SELF_ENDING.has(`${op.method} ${op.path}`));
    const before = await accountSnapshot(sql, a.id);
    const asB = [bearer(b.key), bearer(b.cli), { cookie: `service_session=${b.cookie}`, 'x-service-csrf': '1', origin: stack.baseUrl }];
    const { failures, calls } = await sweepRoutes(stack.baseUrl, ops, aValues, asB, detector);
    expect(calls).toBeGreaterThan(100);
    expectNoFailures(failures);
    expect(await accountSnapshot(sql, a.id)).toEqual(before);
  }, 900_000);

  it("gets nothing of A and changes nothing of A through any MCP tool", async () => {
    const before = await accountSnapshot(sql, a.id);
    expectNoFailures(await sweepTools(stack.mcpUrl, b.key, aValues, detector));
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
