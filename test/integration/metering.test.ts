import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { bound, sql } from '../../platform/db/sql.ts';
import { AppError } from '../../platform/errors.ts';
import { getBalance, lockBalance, verifyLedger } from '../../core/metering/ledger.ts';
import { changeLimits } from '../../core/metering/limits.ts';
import { AfterRetrievalError, runMetered, type MeteringDeps } from '../../core/metering/operation.ts';
import { consumeQuota, readQuota } from '../../core/metering/quotas.ts';
import { createRateLimiter } from '../../core/metering/rate-limit.ts';
import { reserve, settle } from '../../core/metering/reservations.ts';
import { creditSettlementSweeperWorkflowId } from '../../temporal/starts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { memoryLogger, startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

const defaults = loadConfig({}).accountDefaults;
let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await temporal.close();
  await db?.drop();
});

async function newAccount(credits: { monthly: number; onboarding: number }, limits: Record<string, number> = {}) {
  const a = await createAccount(db.orm.em.fork(), defaults, {
    email: `m-${randomUUID()}@example.test`,
    password: 'a-long-enough-password',
    monthlyCredits: credits.monthly,
    onboardingCredits: credits.onboarding,
    ...limits,
  });
  return a.id;
}

const ledgerRows = (accountId: string, kind?: string) =>
  db.orm.em
    .fork()
    .getConnection()
    .execute<{ kind: string; amount: number; monthly_delta: number; onboarding_delta: number; reason: string | null }[]>(
      `select kind, amount, monthly_delta, onboarding_delta, reason from credit_ledger where account_id = ? ${kind ? 'and kind = ?' : ''} order by id`,
      kind ? [accountId, kind] : [accountId],
    );

function deps(): MeteringDeps {
  return { em: db.orm.em.fork(), logger: memoryLogger().logger };
}

describe('credit ledger', () => {
  it('grants onboarding and monthly credits on first use and spends monthly first', async () => {
    const id = await newAccount({ monthly: 2, onboarding: 3 });
    const b = await getBalance(db.orm.em.fork(), id);
    expect([b.monthly, b.onboarding]).toEqual([2, 3]);
    const r = await reserve(db.orm.em.fork(), {
      reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 3, maxProviderCost: 0, consumeQuota: false,
    });
    expect([r.balance.monthly, r.balance.onboarding]).toEqual([0, 2]);
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('concurrent reservations never overdraw: balance >= 0 and ledger == balance', async () => {
    const id = await newAccount({ monthly: 4, onboarding: 3 });
    const attempts = 40;
    const results = await Promise.allSettled(
      Array.from({ length: attempts }, () =>
        reserve(db.orm.em.fork(), {
          reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 0, consumeQuota: false,
        }),
      ),
    );
    const ok = results.filter((r) => r.status === 'fulfilled');
    const refused = results.filter((r) => r.status === 'rejected');
    expect(ok).toHaveLength(7);
    expect(refused).toHaveLength(attempts - 7);
    for (const r of refused) expect((r as PromiseRejectedResult).reason).toMatchObject({ status: 402, code: 'account_credits_exhausted' });
    const b = await getBalance(db.orm.em.fork(), id);
    expect([b.monthly, b.onboarding]).toEqual([0, 0]);
    expect(await verifyLedger(db.orm.em.fork(), id)).toMatchObject({ ok: true, ledger: { monthly: 0, onboarding: 0 } });
  });

  it('is append-only: updating a ledger row is refused by the database', async () => {
    const id = await newAccount({ monthly: 1, onboarding: 0 });
    await getBalance(db.orm.em.fork(), id);
    await expect(
      db.orm.em.fork().getConnection().execute('update credit_ledger set amount = 99 where account_id = ?', [id]),
    ).rejects.toThrow(/append-only/);
  });

  it('flushLater reserves and settles the same, committing its own transaction asynchronously only', async () => {
    const id = await newAccount({ monthly: 10, onboarding: 0 });
    const reservationId = randomUUID();
    const setting = (em: typeof db.orm.em) => bound<{ s: string }>(em, sql`select current_setting('synchronous_commit') as s`);
    await db.orm.em.fork().transactional(async (tx) => {
      await reserve(tx, { reservationId, accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 5, consumeQuota: false, flushLater: true });
      expect((await setting(tx))[0]!.s).toBe('off');
    });
    // Local to that transaction: the pooled connections keep synchronous commits.
    for (let i = 0; i < 3; i++) expect((await setting(db.orm.em.fork()))[0]!.s).toBe('on');
    const s = await settle(db.orm.em.fork(), reservationId, 'completed', { providerCostUsed: 2, flushLater: true });
    expect({ charged: s.charged, refunded: s.refunded }).toEqual({ charged: 3, refunded: 3 });
    expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(7);
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('recognition_failed (OCR the provider refused) refunds everything, and is the ledger\'s reason', async () => {
    const id = await newAccount({ monthly: 10, onboarding: 0 });
    const reservationId = randomUUID();
    await reserve(db.orm.em.fork(), { reservationId, accountId: id, metric: 'ingest', baseCost: 0, maxProviderCost: 4, consumeQuota: false });
    const s = await settle(db.orm.em.fork(), reservationId, 'recognition_failed', { providerCostUsed: 4 });
    expect({ charged: s.charged, refunded: s.refunded }).toEqual({ charged: 0, refunded: 4 });
    expect((await ledgerRows(id, 'refund')).map((r) => r.reason)).toEqual(['recognition_failed']);
    expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(10);
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('settling twice (a retried activity) writes the charge and refund once', async () => {
    const id = await newAccount({ monthly: 10, onboarding: 0 });
    const reservationId = randomUUID();
    await reserve(db.orm.em.fork(), { reservationId, accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 5, consumeQuota: false });
    const [a, b] = await Promise.all([
      settle(db.orm.em.fork(), reservationId, 'completed', { providerCostUsed: 2 }),
      settle(db.orm.em.fork(), reservationId, 'completed', { providerCostUsed: 2 }),
    ]);
    const again = await settle(db.orm.em.fork(), reservationId, 'retrieval_failed');
    for (const s of [a, b, again]) expect({ charged: s.charged, refunded: s.refunded }).toEqual({ charged: 3, refunded: 3 });
    expect(await ledgerRows(id, 'charge')).toHaveLength(1);
    expect(await ledgerRows(id, 'refund')).toHaveLength(1);
    expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(7);
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('renews the monthly allowance at the period start; onboarding credits never reset', async () => {
    const id = await newAccount({ monthly: 5, onboarding: 4 });
    await reserve(db.orm.em.fork(), { reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 7, maxProviderCost: 0, consumeQuota: false });
    const now = await getBalance(db.orm.em.fork(), id);
    expect([now.monthly, now.onboarding]).toEqual([0, 2]);
    const nextPeriod = new Date(now.periodEnd.getTime() + 3_600_000);
    const renewed = await db.orm.em.fork().transactional((tx) => lockBalance(tx, id, nextPeriod));
    expect([renewed.monthly, renewed.onboarding]).toEqual([5, 2]);
    expect(renewed.periodStart.toISOString()).toBe(now.periodEnd.toISOString());
    // Renewing again in the same period changes nothing.
    const again = await db.orm.em.fork().transactional((tx) => lockBalance(tx, id, nextPeriod));
    expect([again.monthly, again.onboarding]).toEqual([5, 2]);
    expect(await ledgerRows(id, 'period_reset')).toHaveLength(1);
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('reserving or settling in a new period renews the balance first, once (the functions answer stale)', async () => {
    const id = await newAccount({ monthly: 5, onboarding: 4 });
    const first = await reserve(db.orm.em.fork(), { reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 6, maxProviderCost: 0, consumeQuota: false });
    expect([first.balance.monthly, first.balance.onboarding]).toEqual([0, 3]);
    const nextPeriod = new Date(first.balance.periodEnd.getTime() + 3_600_000);
    const r = await reserve(db.orm.em.fork(), { reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 2, consumeQuota: false }, nextPeriod);
    expect(r.balance.periodStart.toISOString()).toBe(first.balance.periodEnd.toISOString());
    expect([r.balance.monthly, r.balance.onboarding]).toEqual([2, 3]);
    const s = await settle(db.orm.em.fork(), r.reservationId, 'completed', { providerCostUsed: 1, now: nextPeriod });
    expect([s.charged, s.refunded, s.balance.monthly]).toEqual([2, 1, 3]);
    expect(await ledgerRows(id, 'period_reset')).toHaveLength(1);
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('limit changes are ledger rows', async () => {
    const id = await newAccount({ monthly: 1, onboarding: 0 });
    await changeLimits(db.orm.em.fork(), id, { queryDailyLimit: 7 }, randomUUID());
    const rows = await ledgerRows(id, 'limit_change');
    expect(rows).toHaveLength(1);
    const q = await db.orm.em.fork().transactional((tx) => readQuota(tx, id, 'query'));
    expect(q.daily.limit).toBe(7);
  });
});

describe('quotas', () => {
  it('exhausting the query allowance refuses with 429 and retry-after, spends no credit, and leaves ingest untouched', async () => {
    const id = await newAccount({ monthly: 10, onboarding: 0 }, { queryDailyLimit: 2, ingestDailyLimit: 5 });
    const go = () =>
      reserve(db.orm.em.fork(), { reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 0, consumeQuota: true });
    await go();
    await go();
    const err = await go().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(AppError);
    expect(err).toMatchObject({ status: 429, code: 'account_quota_exceeded' });
    expect(Number((err as AppError).headers['retry-after'])).toBeGreaterThan(0);
    expect((err as AppError).headers['x-service-quota-daily-remaining']).toBe('0');
    expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(8); // the refused one spent nothing
    const ingest = await db.orm.em.fork().transactional((tx) => readQuota(tx, id, 'ingest'));
    expect(ingest.daily).toMatchObject({ limit: 5, used: 0, remaining: 5 });
    const after = await db.orm.em.fork().transactional((tx) => consumeQuota(tx, id, 'ingest'));
    expect(after.daily.remaining).toBe(4);
  });

  it('a 402 for missing credits does not spend a quota unit', async () => {
    const id = await newAccount({ monthly: 0, onboarding: 0 }, { queryDailyLimit: 3 });
    await expect(
      reserve(db.orm.em.fork(), { reservationId: randomUUID(), accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 0, consumeQuota: true }),
    ).rejects.toMatchObject({ status: 402 });
    const q = await db.orm.em.fork().transactional((tx) => readQuota(tx, id, 'query'));
    expect(q.daily.used).toBe(0);
  });
});

describe('metered operations (reserve, work, settle)', () => {
  it('completed work keeps the base credit plus used provider work and refunds the rest, with headers', async () => {
    const id = await newAccount({ monthly: 10, onboarding: 0 });
    const out = await runMetered(deps(), { accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 4, consumeQuota: true }, async (r) => {
      expect(r.balance.monthly).toBe(5); // the maximum was held during the work
      return { value: 'ok', outcome: 'completed', providerCost: 1 };
    });
    expect(out.value).toBe('ok');
    expect(out.headers).toMatchObject({
      'x-service-credit-cost': '2',
      'x-service-credit-remaining': '8',
      'x-service-credit-monthly-remaining': '8',
      'x-service-credit-onboarding-remaining': '0',
      'x-service-quota-metric': 'query',
    });
    expect(out.headers['x-service-credit-monthly-period']).toMatch(/^\d{4}-\d{2}-\d{2}$/);
  });

  it('a failure before retrieval refunds everything: cost 0 and the balance restored', async () => {
    const id = await newAccount({ monthly: 3, onboarding: 0 });
    const err = await runMetered(deps(), { accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 1, consumeQuota: false }, async () => {
      throw new AppError(400, 'validation_error', 'bad selector');
    }).catch((e: unknown) => e as AppError);
    expect(err).toMatchObject({ status: 400, code: 'validation_error' });
    expect(err.headers).toMatchObject({ 'x-service-credit-cost': '0', 'x-service-credit-remaining': '3' });
    expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
  });

  it('a failure after retrieval began keeps the base credit only', async () => {
    const id = await newAccount({ monthly: 3, onboarding: 0 });
    const err = await runMetered(deps(), { accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 1, consumeQuota: false }, async () => {
      throw new AfterRetrievalError(new Error('answer provider down'));
    }).catch((e: unknown) => e as AppError);
    expect(err).toMatchObject({ status: 500, code: 'internal_error' });
    expect(err.headers).toMatchObject({ 'x-service-credit-cost': '1', 'x-service-credit-remaining': '2' });
  });

  it('when the settlement cannot be recorded: 503 credit_settlement_failed showing the standing debit, then the sweeper settles', async () => {
    const id = await newAccount({ monthly: 5, onboarding: 0 });
    const conn = db.orm.em.fork().getConnection();
    await conn.execute(`create or replace function block_charges() returns trigger language plpgsql as $$
      begin if new.kind = 'charge' and new.account_id = '${id}' then raise exception 'ledger unavailable'; end if; return new; end $$`);
    await conn.execute('create trigger block_charges before insert on credit_ledger for each row execute function block_charges()');
    const worker = await startWorker({ orm: db.orm, taskQueue, settlementGraceMs: 1500 });
    try {
      const err = await runMetered(deps(), { accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 2, consumeQuota: false }, async () => ({
        value: 1, outcome: 'completed', providerCost: 0,
      })).catch((e: unknown) => e as AppError);
      expect(err).toMatchObject({ status: 503, code: 'credit_settlement_failed' });
      expect(err.headers).toMatchObject({ 'x-service-credit-cost': '3', 'x-service-credit-remaining': '2' });
      await conn.execute('drop trigger block_charges on credit_ledger');
      // The worker's settlement sweeper settles it after the grace period: base kept, provider part refunded.
      await expect.poll(async () => (await getBalance(db.orm.em.fork(), id)).monthly, { timeout: 30_000, interval: 250 }).toBe(4);
      expect(await ledgerRows(id, 'charge')).toHaveLength(1);
      expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
    } finally {
      await conn.execute('drop trigger if exists block_charges on credit_ledger');
      await worker.stop();
    }
  });

  it('a worker killed between reservation and settlement: after restart the reservation still settles, once', async () => {
    const id = await newAccount({ monthly: 5, onboarding: 0 });
    const queue = uniqueTaskQueue();
    const first = await startWorker({ orm: db.orm, taskQueue: queue, settlementGraceMs: 1500 });
    const reservationId = randomUUID();
    await reserve(db.orm.em.fork(), { reservationId, accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 3, consumeQuota: false });
    await first.stop(); // the API "dies" without settling and the worker goes down before the grace period ends
    expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(1);
    const second = await startWorker({ orm: db.orm, taskQueue: queue, settlementGraceMs: 1500 });
    try {
      await expect.poll(async () => (await getBalance(db.orm.em.fork(), id)).monthly, { timeout: 30_000, interval: 250 }).toBe(4);
      // Both workers joined one sweeper (a fixed id per task queue), which keeps running.
      const sweeper = await temporal.client.workflow.getHandle(creditSettlementSweeperWorkflowId(queue)).describe();
      expect(sweeper.status.name).toBe('RUNNING');
      // Later sweeps and a late settlement by the API change nothing: settled exactly once, as abandoned.
      await new Promise((r) => setTimeout(r, 3500));
      expect(await settle(db.orm.em.fork(), reservationId, 'completed', { providerCostUsed: 3 })).toMatchObject({ charged: 1, refunded: 3 });
      expect(await ledgerRows(id, 'charge')).toHaveLength(1);
      expect(await ledgerRows(id, 'refund')).toHaveLength(1);
      expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(4);
      expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
    } finally {
      await second.stop();
    }
  });

  it('the sweeper settles reservations older than the grace period and leaves younger ones alone', async () => {
    const id = await newAccount({ monthly: 10, onboarding: 0 });
    const old = randomUUID();
    const young = randomUUID();
    for (const reservationId of [old, young]) {
      await reserve(db.orm.em.fork(), { reservationId, accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 3, consumeQuota: false });
    }
    await db.orm.em.fork().getConnection().execute(`update credit_reservation set created_at = now() - interval '2 minutes' where id = ?`, [old]);
    const worker = await startWorker({ orm: db.orm, taskQueue: uniqueTaskQueue(), settlementGraceMs: 60_000 });
    try {
      const status = async (rid: string) =>
        (await db.orm.em.fork().getConnection().execute<{ status: string }[]>('select status from credit_reservation where id = ?', [rid]))[0]?.status;
      await expect.poll(() => status(old), { timeout: 30_000, interval: 250 }).toBe('settled');
      expect(await status(young)).toBe('held');
      expect((await getBalance(db.orm.em.fork(), id)).monthly).toBe(10 - 1 - 4);
      expect((await verifyLedger(db.orm.em.fork(), id)).ok).toBe(true);
    } finally {
      await worker.stop();
    }
  });
});

describe('account-wide rate limiting', () => {
  it('two API processes share one window; rotating the key does not reset it', async () => {
    const id = await newAccount({ monthly: 1, onboarding: 0 });
    const em = db.orm.em.fork();
    const { secret } = await createApiKey(em, id, { name: 'a', scopes: ['ingest'], maxPreset: 'accuracy' });
    const { secret: second } = await createApiKey(em, id, { name: 'b', scopes: ['ingest'], maxPreset: 'accuracy' });
    const limiterA = createRateLimiter(db.url, 4);
    const limiterB = createRateLimiter(db.url, 4);
    const apiA = await startApi({ orm: db.orm, temporal, rateLimiter: limiterA });
    const apiB = await startApi({ orm: db.orm, temporal, rateLimiter: limiterB });
    try {
      const call = (base: string, key: string) => fetch(`${base}/v1/access`, { headers: { authorization: `Bearer ${key}` } });
      expect((await call(apiA.baseUrl, secret)).status).toBe(200);
      expect((await call(apiB.baseUrl, secret)).status).toBe(200);
      expect((await call(apiA.baseUrl, second)).status).toBe(200);
      expect((await call(apiB.baseUrl, second)).status).toBe(200);
      const limited = await call(apiA.baseUrl, second);
      expect(limited.status).toBe(429);
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThan(0);
      expect(((await limited.json()) as { error: { code: string } }).error.code).toBe('rate_limited');
      const { secret: fresh } = await createApiKey(db.orm.em.fork(), id, { name: 'c', scopes: ['ingest'], maxPreset: 'accuracy' });
      expect((await call(apiB.baseUrl, fresh)).status).toBe(429);
    } finally {
      await apiA.close();
      await apiB.close();
      await limiterA.close();
      await limiterB.close();
    }
  });
});

describe('usage report', () => {
  it('folds reserve, charge and refund of one operation into one signed line; a held reservation reads reserve', async () => {
    const { usageReport } = await import('../../core/metering/usage.ts');
    const id = await newAccount({ monthly: 40, onboarding: 0 });
    // Reserved 3 (1 base + 2 provider), charged 1, refunded 2: three rows, one line of -1.
    await runMetered(deps(), { accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 2, consumeQuota: true }, async () => ({
      value: null, outcome: 'completed', providerCost: 0,
    }));
    expect((await ledgerRows(id)).map((r) => r.kind)).toEqual(['grant_onboarding', 'grant_monthly', 'reserve', 'charge', 'refund']);
    const held = await reserve(db.orm.em.fork(), {
      reservationId: randomUUID(), accountId: id, metric: 'ingest', baseCost: 2, maxProviderCost: 0, consumeQuota: false,
    });
    expect(held.held).toBe(2);
    const report = await usageReport(db.orm.em.fork(), id, 2);
    expect(report.ledger).toEqual([
      expect.objectContaining({ kind: 'reserve', amount: -2, monthlyDelta: -2, metric: 'ingest', monthlyAfter: 37 }),
      expect.objectContaining({ kind: 'charge', amount: -1, monthlyDelta: -1, onboardingDelta: 0, metric: 'query', monthlyAfter: 39, reason: 'completed' }),
    ]);
    // The sum of the lines is the balance's change, as with the rows.
    const all = await usageReport(db.orm.em.fork(), id, 100);
    expect(all.ledger.reduce((n, l) => n + l.amount, 0)).toBe(all.credits.balance.totalRemaining);
  });

  it('reports balances, quota counters, recent ledger rows (ledgerLimit) and 30 UTC daily buckets', async () => {
    const { usageReport } = await import('../../core/metering/usage.ts');
    const { AccountUsage } = await import('../../core/contracts/account.ts');
    const id = await newAccount({ monthly: 40, onboarding: 7 }, { queryDailyLimit: 10 });
    await runMetered(deps(), { accountId: id, metric: 'query', baseCost: 1, maxProviderCost: 0, consumeQuota: true }, async () => ({
      value: null, outcome: 'completed',
    }));
    const report = AccountUsage.parse(await usageReport(db.orm.em.fork(), id, 3));
    expect(report.credits).toMatchObject({ balance: { totalRemaining: 46 }, monthly: { remaining: 39, allowance: 40 }, onboarding: { remaining: 7 } });
    expect(report.quotas.query.daily).toMatchObject({ limit: 10, used: 1, remaining: 9 });
    expect(report.quotas.ingest.daily.used).toBe(0);
    // One line per operation: its reserve and charge rows fold into one debit (negative).
    expect(report.ledger.map((r) => [r.kind, r.amount, r.metric])).toEqual([['charge', -1, 'query'], ['grant_monthly', 40, null], ['grant_onboarding', 7, null]]);
    expect(report.daily).toHaveLength(30);
    const today = report.daily[29]!;
    expect(today.date).toBe(new Date().toISOString().slice(0, 10));
    expect(today).toMatchObject({ queries: 1, ingests: 0, creditsCharged: 1 });
    expect(report.daily.slice(0, 29).every((d) => d.queries === 0)).toBe(true);
  });
});
