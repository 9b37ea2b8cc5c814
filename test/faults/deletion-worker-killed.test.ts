import type { ChildProcess } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountDeletionWorkflowId } from '../../temporal/starts.ts';
import {
  accountSnapshot, accountTables, ApiClient, cliSignIn, createKey, createTestAccount, expectError, signIn, sqlClient, type Sql,
} from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { activityRuns, holdRowLock } from '../helpers/faults.ts';
import { kill, spawnWorker } from '../helpers/processes.ts';
import { startApi, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';
import { memoryClient, tag } from '../api/memory/helpers.ts';
import { createRateLimiter, type RateLimiter } from '../../core/metering/rate-limit.ts';

// A worker SIGKILLed in the middle of an account deletion: credentials are revoked (first step,
// committed) and the purge transaction has deleted most of the account's rows but not committed, when
// the process dies (the purge is held on a row lock the test keeps on the account's credit balance).
// The purge must roll back as a whole; after a new worker starts, the user's retry completes the
// deletion once, nothing of the account is left in any table, and a second account is untouched.

let db: TestDatabase;
let sql: Sql;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let rateLimiter: RateLimiter;
let client: ApiClient;
const workers: ChildProcess[] = [];
const today = new Date().toISOString().slice(0, 10);

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  // The API waits briefly for the deletion: a still running one answers 503 and the user retries.
  rateLimiter = createRateLimiter(db.url, 600);
  api = await startApi({ orm: db.orm, temporal, taskQueue, rateLimiter, env: { ACCOUNT_DELETION_WAIT_MS: '3000' } });
  client = new ApiClient(api.baseUrl);
  workers.push(spawnWorker(db.url, taskQueue));
});
afterAll(async () => {
  for (const w of workers) await kill(w);
  await api?.close();
  await rateLimiter?.close();
  await temporal.close();
  await sql?.close();
  await db?.drop();
});

/** An account with credentials and data of every kind: a CLI session, an ingested source, memory, a query. */
async function populated() {
  const account = await createTestAccount(db.orm, { monthlyCredits: 100, onboardingCredits: 10 });
  const cookie = await signIn(client, account);
  await cliSignIn(client, cookie);
  const { secret: key } = await createKey(client, { cookie }, { scopes: ['ingest', 'query', 'memory.read', 'memory.write'] });
  const as = { bearer: key };
  const text = `# Field notes\n\n${Array.from({ length: 50 }, (_, i) => `Station Vega${i} recorded ${i} storms; its keeper was Ines Morales${i}.`).join('\n\n')}`;
  const ingest = await client.post('/v1/ingest/file', { as, body: {
    filename: 'notes.md', contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'),
    dryRun: false, datedAt: today, idempotencyKey: `i-${randomUUID()}`,
  } });
  expect(ingest.status, JSON.stringify(ingest.body)).toBe(202);
  await expect.poll(async () => (await client.get(`/v1/ingest/jobs/${ingest.body.job.id}`, { as })).body.job.status,
    { timeout: 60_000, interval: 250 }).toBe('succeeded');
  const ev = await memoryClient(api.baseUrl).write(key, tag('peer'), tag('sess'), `My favourite mountain is Mount ${tag('Zeph')}.`);
  expect(ev).toMatchObject({ status: 'succeeded', outcome: { claim_id: expect.any(String) } });
  const q = await client.post('/v1/query', { as, body: { idempotencyKey: `q-${randomUUID()}`, mode: 'evidence', query: 'Station Vega7 storms' } });
  expect(q.status, JSON.stringify(q.body)).toBe(200);
  return { account, cookie };
}

const deleteAccount = (cookie: string, email: string) => client.delete('/v1/account', { as: { cookie }, body: { confirmation: email } });

describe('a worker killed in the middle of an account deletion', () => {
  it('rolls the interrupted purge back; the retried deletion completes once and leaves nothing', { timeout: 180_000 }, async () => {
    const a = await populated();
    const b = await populated();
    const before = await accountSnapshot(sql, a.account.id);
    const bystander = await accountSnapshot(sql, b.account.id);
    for (const t of ['record', 'source', 'memory_message', 'memory_claim', 'credit_ledger', 'query_operation', 'quota_usage']) {
      expect(before[t], t).not.toMatch(/^0:/);
    }
    // API-key requests drew from the account's request-rate window, a row keyed by the account id.
    expect(await sql.count('select 1 from rate_limit where key = $1', [`account:${a.account.id}`])).toBe(1);

    // purgeAccountData deletes the credit balance late in its one transaction: hold that row.
    const lock = await holdRowLock(db.url, 'select account_id from credit_balance where account_id = $1 for update', [a.account.id]);
    let first: Awaited<ReturnType<typeof deleteAccount>>;
    try {
      const pending = deleteAccount(a.cookie, a.account.email);
      expect(await lock.waiter()).toMatch(/delete from credit_balance/);
      await kill(workers[0]!);
      first = await pending; // no worker is left: the deletion cannot finish before the API stops waiting
    } finally {
      await lock.release();
    }
    expectError(first, 503, 'account_deletion_pending');
    const handle = temporal.client.workflow.getHandle(accountDeletionWorkflowId(a.account.id));
    const { runId } = await handle.describe();

    // In the middle: recovery-only, credentials revoked, and not one row of the purge committed.
    expect((await sql.query('select state from account where id = $1', [a.account.id]))[0].state).toBe('deletion_pending');
    expect(await sql.count('select 1 from api_key where account_id = $1 and revoked_at is null', [a.account.id])).toBe(0);
    expect(await sql.count('select 1 from cli_session where account_id = $1 and revoked_at is null', [a.account.id])).toBe(0);
    const revoked = ['account', 'api_key', 'cli_session', 'cli_device_authorization', 'oauth_payload', 'oauth_connected_app', 'browser_session'];
    const data = (s: Record<string, string>) => Object.fromEntries(Object.entries(s).filter(([t]) => !revoked.includes(t)));
    expect(data(await accountSnapshot(sql, a.account.id))).toEqual(data(before));

    // A new worker; the user retries (each retry joins the running deletion) until it answers deleted,
    // or, when the deletion finished between two retries, until the session is gone with the account.
    workers.push(spawnWorker(db.url, taskQueue));
    let done: Awaited<ReturnType<typeof deleteAccount>> | undefined;
    await expect.poll(async () => {
      done = await deleteAccount(a.cookie, a.account.email);
      return done.status;
    }, { timeout: 150_000, interval: 1000 }).toBeOneOf([200, 401]);
    if (done!.status === 200) expect(done!.body).toEqual({ schemaVersion: 'service-account-deletion-v1', status: 'deleted' });
    expectError(await deleteAccount(a.cookie, a.account.email), 401, 'unauthorized');

    // Exactly once: the same run completed, every step completed once, the purge on a later attempt.
    // The session can be gone (401) while finalizeAccountDeletion still runs: wait for the run's end.
    await handle.result();
    const described = await handle.describe();
    expect({ runId: described.runId, status: described.status.name }).toEqual({ runId, status: 'COMPLETED' });
    const runs = await activityRuns(handle);
    expect(runs).toEqual({
      revokeAccountCredentials: { scheduled: 1, completed: 1, lastAttempt: 1 },
      purgeAccountData: { scheduled: 1, completed: 1, lastAttempt: expect.any(Number) },
      finalizeAccountDeletion: { scheduled: 1, completed: 1, lastAttempt: 1 },
    });
    expect(runs.purgeAccountData!.lastAttempt).toBeGreaterThanOrEqual(2);

    // Nothing of the account is left in any table that holds account data, nor the account itself.
    const empty = Object.fromEntries((await accountTables(sql)).map((t) => [t, expect.stringMatching(/^0:/)]));
    expect(await accountSnapshot(sql, a.account.id)).toEqual(empty);
    expect(await sql.count('select 1 from account where id = $1', [a.account.id])).toBe(0);
    // Its request-rate window (keyed by account id, not in an account_id column) is gone too.
    expect(await sql.count('select 1 from rate_limit where key = $1', [`account:${a.account.id}`])).toBe(0);
    // The other account, its ledger included, is exactly as it was.
    expect(await accountSnapshot(sql, b.account.id)).toEqual(bystander);
  });
});
