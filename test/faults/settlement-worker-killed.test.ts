import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { reserve } from '../../core/metering/reservations.ts';
import { creditSettlementSweeperWorkflowId } from '../../temporal/starts.ts';
import { createTestAccount, sqlClient, type Sql } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { holdRowLock } from '../helpers/faults.ts';
import { kill, spawnWorker } from '../helpers/processes.ts';
import { testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// A worker SIGKILLed in the middle of a credit settlement sweep. Reservations left held by an API that
// never settled them (it "crashed") are settled by the task queue's sweeper workflow; the sweep is
// stopped half way by a row lock the test holds on one reservation, the worker is killed there, and a
// new worker must settle every reservation exactly once: one reserve, one charge and one refund row
// each, and a balance equal to the one computed from the inputs.

let db: TestDatabase;
let sql: Sql;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
const workers: ChildProcess[] = [];

const MONTHLY = 100_000;
const COUNT = 300;
const BASE = 1;
const MAX_PROVIDER = 3;

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
});
afterAll(async () => {
  for (const w of workers) await kill(w);
  // The sweeper is long-lived by design; end this queue's one so it does not outlive the test.
  await temporal.client.workflow.getHandle(creditSettlementSweeperWorkflowId(taskQueue)).terminate('test finished').catch(() => undefined);
  await temporal.close();
  await sql?.close();
  await db?.drop();
});

describe('a worker killed in the middle of a credit settlement sweep', () => {
  it('is replaced, and every reservation is settled exactly once with an exact balance', { timeout: 120_000 }, async () => {
    const account = await createTestAccount(db.orm, { monthlyCredits: MONTHLY, onboardingCredits: 0 });
    const ids: string[] = [];
    for (let i = 0; i < COUNT; i++) {
      const reservationId = randomUUID();
      await reserve(db.orm.em.fork(), { reservationId, accountId: account.id, metric: 'query', baseCost: BASE, maxProviderCost: MAX_PROVIDER, consumeQuota: false });
      ids.push(reservationId);
    }
    const balance = async () => (await sql.query<{ total: number }>(
      'select monthly_remaining + onboarding_remaining as total from credit_balance where account_id = $1', [account.id]))[0]!.total;
    expect(await balance()).toBe(MONTHLY - COUNT * (BASE + MAX_PROVIDER));
    const settled = () => sql.count(`select 1 from credit_reservation where account_id = $1 and status = 'settled'`, [account.id]);

    // The sweep goes oldest first: it settles the first half, then blocks on the locked reservation.
    const lock = await holdRowLock(db.url, 'select id from credit_reservation where id = $1 for update', [ids[COUNT / 2]]);
    let settledAtKill: number;
    try {
      const first = spawnWorker(db.url, taskQueue, { SETTLEMENT_GRACE_SECONDS: '1' });
      workers.push(first);
      expect(await lock.waiter()).toMatch(/cairn_settle/);
      settledAtKill = await settled();
      await kill(first);
    } finally {
      // The dead worker's blocked settlement (one statement, its own transaction) now completes.
      await lock.release();
    }
    expect(settledAtKill).toBeGreaterThan(0);
    expect(settledAtKill).toBeLessThan(COUNT);

    workers.push(spawnWorker(db.url, taskQueue, { SETTLEMENT_GRACE_SECONDS: '1' }));
    await expect.poll(settled, { timeout: 100_000, interval: 500 }).toBe(COUNT);

    const reservations = await sql.query<{ status: string; charged: number; refunded: number; outcome: string }>(
      'select status, charged, refunded, outcome from credit_reservation where account_id = $1', [account.id]);
    expect(reservations).toEqual(ids.map(() => ({ status: 'settled', charged: BASE, refunded: MAX_PROVIDER, outcome: 'abandoned' })));
    // Exactly one reserve, charge and refund row per reservation, with the amounts of the inputs.
    const rows = await sql.query<{ reservation_id: string; kind: string; amount: number }>(
      `select reservation_id, kind, amount from credit_ledger where account_id = $1 and reservation_id is not null order by reservation_id, kind`, [account.id]);
    const expected = [...ids].sort().flatMap((id) => [
      { reservation_id: id, kind: 'charge', amount: BASE },
      { reservation_id: id, kind: 'refund', amount: MAX_PROVIDER },
      { reservation_id: id, kind: 'reserve', amount: BASE + MAX_PROVIDER },
    ]);
    expect(rows).toEqual(expected);
    // Nothing else was written to the ledger but the opening grants; the balance is exact and agrees with it.
    expect(await sql.count(`select 1 from credit_ledger where account_id = $1 and reservation_id is null and kind not in ('grant_monthly', 'grant_onboarding')`, [account.id])).toBe(0);
    expect(await balance()).toBe(MONTHLY - COUNT * BASE);
    const [sums] = await sql.query<{ total: number }>(
      'select sum(monthly_delta + onboarding_delta)::int as total from credit_ledger where account_id = $1', [account.id]);
    expect(sums!.total).toBe(MONTHLY - COUNT * BASE);
    console.info(`reservations settled when the worker was killed: ${settledAtKill} of ${COUNT}`);
  });
});
