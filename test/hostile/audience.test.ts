import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, createKey, createTestAccount, eventually, signIn, sqlClient, type Sql } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startMcpStack, type McpStack } from '../helpers/mcp.ts';
import { startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { expectNoFailures, leakDetector, operations, send, SELF_ENDING, sweepRoutes, sweepTools } from './fuzz.ts';

// Audience isolation sweep (issue 26): inside one account, a key that reaches the whole account and a
// key limited to the audience `team-x` own real data (ingested sources and their jobs, native memory
// with derived claims, events, citations). A key limited to `team-y`, with every scope, calls every
// route of the OpenAPI document and every MCP tool with their identifiers, labels and citation handles
// in every slot. Nothing outside team-y may come back (no id, no text) and nothing outside it may
// change: every row of the account not labelled team-y is byte-for-byte the same afterwards.

const ALL_SCOPES = ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'];
const tag = randomBytes(4).toString('hex');

let db: TestDatabase;
let sql: Sql;
let stack: McpStack;
let worker: Awaited<ReturnType<typeof startWorker>> | undefined;
let accountId: string;
let limited: string;
/** Identifiers and labels outside team-y, tried in every slot. */
const outsideValues: string[] = [];
/** What must never reach the team-y key. */
const outsideSecrets: string[] = [];
const temporal = testTemporalClient();
const bearer = (token: string) => ({ authorization: `Bearer ${token}` });

/** What the whole-account key and the team-x key made: sources (= their jobs' ids), peers, sessions. */
const outside = { sources: [] as string[], peers: [] as string[], sessions: [] as string[] };

/**
 * The rows of what lies outside team-y, table by table (`o` holds the ids of `outside`), including
 * rows made later about them (a deletion job or event, a message written to an outside peer).
 */
const OUTSIDE: Record<string, string> = {
  source: 'id = any(o.src)',
  ingest_job: 'id = any(o.src) or source_id = any(o.src)',
  ingest_blob: 'job_id = any(o.src)',
  record: 'source_id = any(o.src)',
  record_term: 'source_id = any(o.src)',
  memory_peer: 'id = any(o.peers)',
  memory_session: 'id = any(o.sessions)',
  memory_event: 'peer_id = any(o.peers) or session_id = any(o.sessions)',
  memory_message: 'peer_id = any(o.peers) or session_id = any(o.sessions)',
  memory_claim: 'peer_id = any(o.peers) or session_id = any(o.sessions)',
  memory_claim_history: 'claim_id in (select id from memory_claim where peer_id = any(o.peers) or session_id = any(o.sessions))',
};
const outsideParams = () => [accountId, outside.sources, outside.peers, outside.sessions];
/** `from` of a statement over table t with the outside ids at hand as `o`; parameters: outsideParams(). */
const fromOutside = (t: string) => `from "${t}" x, (select $2::uuid[] as src, $3::uuid[] as peers, $4::uuid[] as sessions) o`;

async function outsideSnapshot(): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [t, where] of Object.entries(OUTSIDE)) {
    const [row] = await sql.query<{ d: string; n: number }>(
      `select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as d, count(*)::int as n ${fromOutside(t)} where account_id = $1 and (${where})`,
      outsideParams(),
    );
    out[t] = `${row!.n}:${row!.d}`;
  }
  return out;
}

/** Whether a row of the account outside OUTSIDE mentions the value (then the limited key made it: a peer it named so, say). */
async function ownedByMine(value: string): Promise<boolean> {
  for (const t of ['source', 'ingest_job', 'memory_peer', 'memory_session', 'memory_event', 'memory_message', 'memory_claim']) {
    const mine = `select 1 ${fromOutside(t)} where account_id = $1 and not coalesce(${OUTSIDE[t]}, false) and strpos(x::text, $5) > 0`;
    if (await sql.count(mine, [...outsideParams(), value])) return true;
  }
  return false;
}
const detector = leakDetector(outsideSecrets, ownedByMine);

async function ingest(key: string, text: string, name: string): Promise<string> {
  const res = await send(stack.baseUrl, 'POST', '/v1/ingest/file', {
    headers: bearer(key),
    body: { filename: `${name}.txt`, contentType: 'text/plain', contentBase64: Buffer.from(text).toString('base64'), dryRun: false, datedAt: '2026-11-01', idempotencyKey: `ingest-${name}-${tag}` },
  });
  expect(res.status, res.text).toBe(202);
  const id = res.json.job.id as string;
  await eventually(async () => (await send(stack.baseUrl, 'GET', `/v1/ingest/jobs/${id}`, { headers: bearer(key) })).json?.job?.status === 'succeeded', `ingest ${name}`, 60_000);
  return id;
}

/** A peer and a session of the key's, a message with a derived claim; returns the labels and ids. */
async function remember(key: string, name: string, content: string) {
  const memory = (method: string, path: string, body?: unknown) =>
    send(stack.baseUrl, method, `/v1/workspaces/default${path}`, body === undefined ? { headers: bearer(key) } : { headers: bearer(key), body });
  const peer = `peer-${name}-${tag}`;
  const session = `session-${name}-${tag}`;
  expect((await memory('POST', '/peers', { id: peer })).status).toBe(200);
  expect((await memory('POST', '/sessions', { id: session })).status).toBe(200);
  const write = await memory('POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content }] });
  expect(write.status, write.text).toBe(200);
  await eventually(async () => (await memory('GET', `/events/${write.json.event_id}`)).json?.status === 'succeeded', `${name} memory event`, 60_000);
  const claims = await memory('POST', '/claims/list', { peer_id: peer });
  expect(claims.json.items.length, claims.text).toBeGreaterThan(0);
  return { peer, session, eventId: write.json.event_id as string, claimIds: (claims.json.items as { id: string }[]).map((c) => c.id) };
}

async function handles(key: string, query: string): Promise<string[]> {
  const q = await send(stack.baseUrl, 'POST', '/v1/query', { headers: bearer(key), body: { idempotencyKey: `q-${randomBytes(6).toString('hex')}`, mode: 'evidence', query } });
  expect(q.status, q.text).toBe(200);
  return (q.json.evidence as { citationHandle: string }[]).map((e) => e.citationHandle);
}

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  const taskQueue = uniqueTaskQueue();
  worker = await startWorker({ orm: db.orm, taskQueue });
  stack = await startMcpStack({ orm: db.orm, temporal, taskQueue });
  const client = new ApiClient(stack.baseUrl);
  const account = await createTestAccount(db.orm, {
    monthlyCredits: 10_000, queryDailyLimit: 10_000, ingestDailyLimit: 10_000, queryMonthlyLimit: 10_000, ingestMonthlyLimit: 10_000,
  });
  accountId = account.id;
  const cookie = await signIn(client, account);
  const whole = (await createKey(client, { cookie }, { scopes: ALL_SCOPES })).secret;
  const teamX = (await createKey(client, { cookie }, { scopes: ALL_SCOPES, audiences: ['team-x'] })).secret;
  limited = (await createKey(client, { cookie }, { scopes: ALL_SCOPES, audiences: ['team-y'] })).secret;

  const wholeCanary = `walruscanary${tag}`;
  const xCanary = `otter${tag}canary`;
  const wholeJob = await ingest(whole, `The ${wholeCanary} project ships on 3 March 2026.\n\nIts owner is Dana Whitfield.`, 'whole');
  const xJob = await ingest(teamX, `The ${xCanary} project ships on 9 May 2026.\n\nIts owner is Femi Adeyemi.`, 'x');
  const wholeMemory = await remember(whole, 'whole', `I moved to Lisbon in 2019 and my project is called ${wholeCanary}.`);
  const xMemory = await remember(teamX, 'x', `I moved to Ghent in 2021 and my project is called ${xCanary}.`);
  // The limited key's own data, so that reaching its audience is shown to work.
  await ingest(limited, 'The heron project of team y ships in June.', 'y');
  await remember(limited, 'y', 'I moved to Oslo in 2020 and I keep bees.');

  outside.sources.push(wholeJob, xJob);
  const labels = async (table: string, names: string[]) =>
    (await sql.query<{ id: string }>(`select id::text as id from ${table} where account_id = $1 and label = any($2)`, [accountId, names])).map((r) => r.id);
  outside.peers.push(...(await labels('memory_peer', [wholeMemory.peer, xMemory.peer])));
  outside.sessions.push(...(await labels('memory_session', [wholeMemory.session, xMemory.session])));
  const ids = async (t: string) =>
    (await sql.query<{ id: string }>(`select id::text as id ${fromOutside(t)} where account_id = $1 and (${OUTSIDE[t]})`, outsideParams())).map((r) => r.id);
  const outsideIds = [...outside.sources, ...(await ids('memory_event')), ...(await ids('memory_message')), ...(await ids('memory_claim'))];
  expect(outsideIds).toEqual(expect.arrayContaining([wholeMemory.eventId, xMemory.eventId, ...wholeMemory.claimIds, ...xMemory.claimIds]));
  const citations = [...(await handles(whole, `${wholeCanary} Lisbon`)).slice(0, 2), ...(await handles(teamX, `${xCanary} Ghent`)).slice(0, 2)];
  outsideValues.push(...outsideIds, wholeMemory.peer, wholeMemory.session, xMemory.peer, xMemory.session, ...citations);
  outsideSecrets.push(wholeCanary, xCanary, ...outsideIds);
  // As in the cross-account sweep, no worker runs during the sweeps: what the limited key queues waits,
  // so an echo stays attributable to its own rows. The last test processes it all and checks again.
  await worker.stop();
  worker = undefined;
}, 240_000);

afterAll(async () => {
  await stack?.close();
  await worker?.stop();
  await temporal.close();
  await sql?.close();
  await db?.drop();
});

describe('a key limited to the audience team-y', () => {
  it('reaches its own audience, and the detector sees outside data when a key that reaches it asks', async () => {
    const own = await send(stack.baseUrl, 'GET', '/v1/ingest/jobs', { headers: bearer(limited) });
    expect(own.status).toBe(200);
    expect(own.json.jobs.length).toBeGreaterThan(0);
    const peers = await send(stack.baseUrl, 'POST', '/v1/workspaces/default/peers/list', { headers: bearer(limited), body: {} });
    expect(peers.json.items.map((p: { id: string }) => p.id)).toEqual([`peer-y-${tag}`]);
    const [row] = await sql.query<{ n: number }>('select count(*)::int as n from ingest_job where account_id = $1', [accountId]);
    expect(row!.n).toBeGreaterThan(own.json.jobs.length);
  });

  it('gets nothing outside its audience and changes nothing outside it through any route', async () => {
    const doc = await send(stack.baseUrl, 'GET', '/openapi.json');
    const ops = operations(doc.json).filter((op) => !SELF_ENDING.has(`${op.method} ${op.path}`));
    const before = await outsideSnapshot();
    // The workspace stays `default`, so every memory route reaches its handler with the values.
    const { failures, calls } = await sweepRoutes(stack.baseUrl, ops, outsideValues, [bearer(limited)], detector, { ws: 'default' });
    expect(calls).toBeGreaterThan(100);
    expectNoFailures(failures);
    expect(await outsideSnapshot()).toEqual(before);
  }, 900_000);

  it('gets nothing outside its audience and changes nothing outside it through any MCP tool', async () => {
    const before = await outsideSnapshot();
    expectNoFailures(await sweepTools(stack.mcpUrl, limited, outsideValues, detector));
    expect(await outsideSnapshot()).toEqual(before);
  }, 600_000);

  it('its queued work, once a worker has processed it, changed nothing outside its audience', async () => {
    const before = await outsideSnapshot();
    const unfinished = () => sql.count(
      `select 1 from memory_event where status in ('queued', 'running')
       union all select 1 from ingest_job where status not in ('succeeded', 'failed', 'quarantined')`, []);
    expect(await unfinished()).toBeGreaterThan(0);
    worker = await startWorker({ orm: db.orm, taskQueue: stack.config.temporal.taskQueue });
    await eventually(async () => (await unfinished()) === 0, 'queued work', 120_000);
    expect(await outsideSnapshot()).toEqual(before);
  }, 180_000);
});
