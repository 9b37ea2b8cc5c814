import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomUUID } from 'node:crypto';
import { memoryBatchWorkflowId } from '../../temporal/starts.ts';
import { sqlClient, type Sql } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { activityRuns, holdRowLock } from '../helpers/faults.ts';
import { kill, spawnWorker } from '../helpers/processes.ts';
import { startApi, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { accountWithKeys, memoryClient, tag } from '../api/memory/helpers.ts';

// A worker SIGKILLed in the middle of a native-memory add-messages event: the event is running, its
// claim derived, and the transaction that stores the claim and ends the event is open and blocked (on a
// row lock the test holds) when the process dies. A new worker must end the event `succeeded` once,
// with one claim, one history entry and every message stored once. A second event of the same peer,
// claimed by a dispatcher that died before starting its batch, must be dispatched again (stale) and end
// the same way.

let db: TestDatabase;
let sql: Sql;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
const workers: ChildProcess[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  api = await startApi({ orm: db.orm, temporal, taskQueue });
});
afterAll(async () => {
  for (const w of workers) await kill(w);
  await api?.close();
  await temporal.close();
  await sql?.close();
  await db?.drop();
});

describe('a worker killed in the middle of a memory add-messages event', () => {
  // Deadlines for a loaded machine (load 10+), where a worker's start (bundling its workflows) alone
  // can take minutes: each wait below ends on its event, so a quiet machine never waits them out.
  it('is replaced, and each event succeeds once with one claim and every message once', { timeout: 900_000 }, async () => {
    const c = memoryClient(api.baseUrl);
    const { account, keys } = await accountWithKeys(db.orm, { full: ['memory.read', 'memory.write'] });
    const key = keys.full!;
    const peer = tag('peer');
    const session = tag('sess');
    const mountain = tag('Zeph');
    const fjord = tag('Geir');
    expect((await c.mem(key, 'POST', '/peers', { id: peer })).status).toBe(200);
    expect((await c.mem(key, 'POST', '/sessions', { id: session })).status).toBe(200);
    const messages = [
      { role: 'user', content: 'Good morning.' },
      { role: 'assistant', content: 'Good morning! How can I help?' },
      { role: 'user', content: `My favourite mountain is Mount ${mountain}.` },
      { role: 'assistant', content: 'Noted.' },
    ] as const;
    // No worker is running yet: the event waits queued.
    const write = await c.mem(key, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages });
    expect(write.status, write.text).toBe(200);
    const eventId = write.body.event_id as string;
    // A second write, claimed by a dispatcher that died before starting its batch workflow (the state
    // such a dispatcher leaves: a batch id, dispatched an hour ago, still queued).
    const second = await c.mem(key, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content: `My favourite fjord is the ${fjord} fjord.` }] });
    expect(second.status, second.text).toBe(200);
    const lost = { event_id: second.body.event_id as string };
    await sql.query(`update memory_event set batch_id = $2, dispatched_at = now() - interval '1 hour' where id = $1`, [lost.event_id, randomUUID()]);
    const peerId = (await sql.query<{ id: string }>('select id from memory_peer where account_id = $1 and label = $2', [account.id, peer]))[0]!.id;

    // The processing transaction takes the peer `for share`; the test holds it `for update`.
    const lock = await holdRowLock(db.url, 'select id from memory_peer where id = $1 for update', [peerId]);
    try {
      const first = spawnWorker(db.url, taskQueue);
      workers.push(first);
      expect(await lock.waiter(300_000)).toMatch(/memory_peer.*for share/s);
      // In the middle: the event is running and nothing derived is stored yet.
      // (Polled: the sweeper may have started the lost event too, and it may be the one seen waiting.)
      await expect.poll(async () => (await sql.query('select status from memory_event where id = $1', [eventId]))[0].status, { timeout: 120_000, interval: 100 }).toBe('running');
      expect(await sql.count('select 1 from memory_claim where account_id = $1', [account.id])).toBe(0);
      await kill(first);
    } finally {
      // The dead worker's backend gets the lock, finds its client gone and rolls back.
      await lock.release();
    }

    workers.push(spawnWorker(db.url, taskQueue));
    const ev = await c.waitEvent(key, eventId, 300_000);
    expect(ev).toMatchObject({ status: 'succeeded', failure: null, outcome: { messages: messages.length, claim_id: expect.any(String) } });
    const lostEv = await c.waitEvent(key, lost.event_id, 300_000);
    expect(lostEv).toMatchObject({ status: 'succeeded', failure: null, outcome: { messages: 1, claim_id: expect.any(String) } });

    // One claim per event, each with its one ADD entry; every message once, made available.
    const claims = await sql.query<{ id: string; event_id: string; content: string; revision: number }>(
      'select id, event_id, content, revision from memory_claim where account_id = $1 order by content', [account.id]);
    expect(claims).toEqual([
      { id: lostEv.outcome.claim_id, event_id: lost.event_id, content: expect.stringContaining(fjord), revision: 1 },
      { id: ev.outcome.claim_id, event_id: eventId, content: expect.stringContaining(mountain), revision: 1 },
    ]);
    const history = await sql.query<{ claim_id: string; seq: number; event: string }>(
      'select claim_id, seq, event from memory_claim_history where account_id = $1 order by claim_id', [account.id]);
    expect(history).toEqual(claims.map((cl) => ({ claim_id: cl.id, seq: 1, event: 'ADD' })).sort((x, y) => x.claim_id.localeCompare(y.claim_id)));
    const stored = await sql.query<{ event_id: string; position: number; content: string; available: boolean }>(
      'select event_id, position, content, available from memory_message where account_id = $1 order by event_id = $2 desc, position', [account.id, eventId]);
    expect(stored).toEqual([
      ...messages.map((m, position) => ({ event_id: eventId, position, content: m.content, available: true })),
      { event_id: lost.event_id, position: 0, content: expect.stringContaining(fjord), available: true },
    ]);
    expect(await sql.count('select 1 from memory_event where account_id = $1', [account.id])).toBe(2);

    // Once: the first worker's dispatcher claimed both events (the stale one again), the interrupted batch
    // ran its activity again after the crash and completed it once, and nothing ran twice.
    const batches = await sql.query<{ batch_id: string }>('select distinct batch_id from memory_event where id = any($1)', [[eventId, lost.event_id]]);
    let succeeded = 0;
    for (const { batch_id } of batches) {
      const handle = temporal.client.workflow.getHandle(memoryBatchWorkflowId(batch_id));
      succeeded += ((await handle.result()) as { succeeded: number }).succeeded;
      expect(await activityRuns(handle)).toEqual({ processMemoryBatch: { scheduled: 1, completed: 1, lastAttempt: expect.any(Number) } });
    }
    expect(succeeded).toBe(2);
    const [interrupted] = await sql.query<{ batch_id: string }>('select batch_id from memory_event where id = $1', [eventId]);
    const runs = await activityRuns(temporal.client.workflow.getHandle(memoryBatchWorkflowId(interrupted!.batch_id)));
    expect(runs.processMemoryBatch!.lastAttempt).toBeGreaterThanOrEqual(2);
    // And the claims are readable through the API.
    for (const cl of claims) expect((await c.mem(key, 'GET', `/claims/${cl.id}`)).body).toMatchObject({ id: cl.id });
  });
});
