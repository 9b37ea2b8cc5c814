import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryEventWorkflowId } from '../../shared/temporal/workflows.ts';
import { sqlClient, type Sql } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { activityRuns, holdRowLock } from '../helpers/faults.ts';
import { kill, spawnWorker } from '../helpers/processes.ts';
import { startApi, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { accountWithKeys, memoryClient, tag } from '../api/memory/helpers.ts';

// A worker SIGKILLed in the middle of a native-memory add-messages event: the event is running, its
// claim derived, and the transaction that stores the claim and ends the event is open and blocked (on a
// row lock the test holds) when the process dies. A new worker must end the event `succeeded` once,
// with one claim, one history entry and every message stored once.

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
  it('is replaced, and the event succeeds once with one claim and every message once', { timeout: 120_000 }, async () => {
    const c = memoryClient(api.baseUrl);
    const { account, keys } = await accountWithKeys(db.orm, { full: ['memory.read', 'memory.write'] });
    const key = keys.full!;
    const peer = tag('peer');
    const session = tag('sess');
    const mountain = tag('Zeph');
    expect((await c.mem(key, 'POST', '/peers', { id: peer })).status).toBe(200);
    expect((await c.mem(key, 'POST', '/sessions', { id: session })).status).toBe(200);
    const messages = [
      { role: 'user', content: 'Good morning.' },
      { role: 'assistant', content: 'Good morning! How can I help?' },
      { role: 'user', content: `My favourite mountain is Mount ${mountain}.` },
      { role: 'assistant', content: 'Noted.' },
    ];
    // No worker is running yet: the event waits queued (its workflow started, no one polling).
    const write = await c.mem(key, 'POST', `/sessions/${session}/messages`, { peer_id: peer, messages });
    expect(write.status, write.text).toBe(200);
    const eventId = write.body.event_id as string;
    const [{ id: peerId }] = await sql.query<{ id: string }>('select id from memory_peer where account_id = $1 and label = $2', [account.id, peer]) as [{ id: string }];

    // The processing transaction takes the peer `for share`; the test holds it `for update`.
    const lock = await holdRowLock(db.url, 'select id from memory_peer where id = $1 for update', [peerId]);
    try {
      const first = spawnWorker(db.url, taskQueue);
      workers.push(first);
      expect(await lock.waiter()).toMatch(/memory_peer.*for share/s);
      // In the middle: the event is running and nothing derived is stored yet.
      expect((await sql.query('select status from memory_event where id = $1', [eventId]))[0].status).toBe('running');
      expect(await sql.count('select 1 from memory_claim where event_id = $1', [eventId])).toBe(0);
      await kill(first);
    } finally {
      // The dead worker's backend gets the lock, finds its client gone and rolls back.
      await lock.release();
    }

    workers.push(spawnWorker(db.url, taskQueue));
    const ev = await c.waitEvent(key, eventId, 90_000);
    expect(ev).toMatchObject({ status: 'succeeded', failure: null, outcome: { messages: messages.length, claim_id: expect.any(String) } });

    const claims = await sql.query<{ id: string; content: string; revision: number }>(
      'select id, content, revision from memory_claim where account_id = $1', [account.id]);
    expect(claims).toEqual([{ id: ev.outcome.claim_id, content: expect.stringContaining(mountain), revision: 1 }]);
    const history = await sql.query<{ seq: number; event: string }>('select seq, event from memory_claim_history where claim_id = $1', [claims[0]!.id]);
    expect(history).toEqual([{ seq: 1, event: 'ADD' }]);
    const stored = await sql.query<{ position: number; content: string; available: boolean }>(
      'select position, content, available from memory_message where account_id = $1 order by position', [account.id]);
    expect(stored).toEqual(messages.map((m, position) => ({ position, content: m.content, available: true })));
    expect(await sql.count('select 1 from memory_event where account_id = $1', [account.id])).toBe(1);

    // Once: the workflow ran the processing activity once more after the crash and completed it once.
    const handle = temporal.client.workflow.getHandle(memoryEventWorkflowId(eventId));
    expect(await handle.result()).toEqual({ status: 'succeeded' });
    const runs = await activityRuns(handle);
    expect(runs).toEqual({ processMemoryEvent: { scheduled: 1, completed: 1, lastAttempt: expect.any(Number) } });
    expect(runs.processMemoryEvent!.lastAttempt).toBeGreaterThanOrEqual(2);
    // And the claim is readable through the API.
    expect((await c.mem(key, 'GET', `/claims/${claims[0]!.id}`)).body).toMatchObject({ id: claims[0]!.id });
  });
});
