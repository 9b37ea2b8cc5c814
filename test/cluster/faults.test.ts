import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { createOrm, type Orm } from '../../platform/db/orm.ts';
import { verifyLedger } from '../../core/metering/ledger.ts';
import { createTestAccount, sqlClient, type Json } from '../helpers/accounts.ts';
import { startCluster, type RunningCluster } from '../helpers/cluster.ts';
import { accountHome, rendezvous } from '../../platform/net/affinity.ts';

// Issue 30's fault test: `npm run cluster` (2 APIs behind the balancer, 2 workers, the real Temporal
// server) under the mixed load (live file ingests, memory message writes, evidence queries, each with
// its idempotency key); one API and one worker are SIGKILLed in the middle. Clients retry through the
// balancer with the same key until they get their answer. Afterwards: one job, one source and one set
// of records per ingest key, one event and one message per memory key (and no claim twice), one
// operation per query key, the credit ledger equal to the balance with no entry twice, every job and
// event terminal, and the killed processes started again by the script.

let cluster: RunningCluster;
let orm: Orm;
let key: string;
let accountId: string;

type Op = { kind: 'ingest' | 'memory' | 'query'; key: string; path: string; body: Json; attempts: number; result?: Json };

const PEERS = ['dana', 'omar', 'ines'];
const newOp = (kind: Op['kind'], n: number): Op => {
  const idem = `fault-${kind}-${n}-${randomUUID()}`;
  if (kind === 'ingest') {
    const text = `# Station ${n}\n\nStation Vega ${n} recorded ${n * 7} storms. The keeper was Ines Morales.\n\nIt studies migrating terns.\n`;
    return { kind, key: idem, attempts: 0, path: '/v1/ingest/file', body: {
      filename: `station-${n}.md`, contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'),
      dryRun: false, datedAt: '2026-11-01', idempotencyKey: idem,
    } };
  }
  if (kind === 'memory') {
    const peer = PEERS[n % PEERS.length]!;
    return { kind, key: idem, attempts: 0, path: `/v1/workspaces/default/sessions/s-${peer}/messages`, body: {
      peer_id: peer, idempotency_key: idem, messages: [{ role: 'user', content: `I moved to Lisbon in ${1990 + (n % 30)} and I prefer tea number ${n}.` }],
    } };
  }
  return { kind, key: idem, attempts: 0, path: '/v1/query', body: { idempotencyKey: idem, mode: 'evidence', query: 'storms recorded by station Vega' } };
};

/** Sends the op until it is answered 2xx; retries (same body, same key) after connection errors, 5xx and 409 operation_in_progress. */
async function send(op: Op): Promise<void> {
  const deadline = Date.now() + 180_000;
  for (;;) {
    op.attempts++;
    let status = 0;
    let body: Json = null;
    try {
      const res = await fetch(`${cluster.url}${op.path}`, {
        method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
        body: JSON.stringify(op.body), signal: AbortSignal.timeout(30_000),
      });
      status = res.status;
      body = await res.json().catch(() => null);
    } catch {
      // the connection broke (the API was killed mid-request): retry
    }
    if (status >= 200 && status < 300) {
      op.result = body;
      return;
    }
    const retry = status === 0 || status >= 500 || (status === 409 && body?.error?.code === 'operation_in_progress');
    if (!retry) throw new Error(`${op.kind} ${op.key} answered ${status}: ${JSON.stringify(body)}`);
    if (Date.now() > deadline) throw new Error(`${op.kind} ${op.key} still failing after ${op.attempts} attempts (${status})`);
    await sleep(200);
  }
}

describe('npm run cluster: an API and a worker SIGKILLed under the mixed load', () => {
  beforeAll(async () => {
    const big = '100000000';
    cluster = await startCluster({
      CLUSTER_APIS: '2', CLUSTER_WORKERS: '2', RATE_LIMIT_PER_MINUTE: '1000000',
      // The killed API's held credit reservations are settled by the sweep after this grace.
      SETTLEMENT_GRACE_SECONDS: '10',
      DEFAULT_QUERY_DAILY_LIMIT: big, DEFAULT_QUERY_MONTHLY_LIMIT: big, DEFAULT_INGEST_DAILY_LIMIT: big, DEFAULT_INGEST_MONTHLY_LIMIT: big,
    });
    orm = await createOrm(cluster.databaseUrl);
    const account = await createTestAccount(orm, {
      monthlyCredits: 1_000_000, queryDailyLimit: 1_000_000, ingestDailyLimit: 1_000_000, queryMonthlyLimit: 1_000_000, ingestMonthlyLimit: 1_000_000,
    });
    accountId = account.id;
    key = (await createApiKey(orm.em.fork(), accountId, { name: 'k', scopes: ['ingest', 'query', 'memory.read', 'memory.write'], maxPreset: 'accuracy' })).secret;
    for (const p of PEERS) {
      for (const [path, id] of [['peers', p], ['sessions', `s-${p}`]] as const) {
        const r = await fetch(`${cluster.url}/v1/workspaces/default/${path}`, {
          method: 'POST', headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' }, body: JSON.stringify({ id }),
        });
        expect(r.status).toBe(200);
      }
    }
  }, 360_000);

  afterAll(async () => {
    await orm?.close();
    await cluster?.stop();
  }, 120_000);

  it('loses and duplicates nothing, finishes every job and event, and restarts the killed processes', async () => {
    const ops: Op[] = [];
    const kinds: Op['kind'][] = ['ingest', 'memory', 'query', 'query', 'memory'];
    const loadSeconds = 40;
    const until = Date.now() + loadSeconds * 1000;
    const clients = Array.from({ length: 6 }, async (_, c) => {
      for (let n = c; Date.now() < until; n += 6) {
        const op = newOp(kinds[n % kinds.length]!, n);
        ops.push(op);
        await send(op);
      }
    });
    // Mid-load: SIGKILL the account's home API (every request goes there, account affinity: those in
    // flight break and the rest move to the other API) and one worker (activities in flight).
    await sleep(12_000);
    const home = rendezvous(accountHome(accountId), [{ name: 'api-1' }, { name: 'api-2' }])!.name;
    const [apiPid, workerPid] = [cluster.pid(home)!, cluster.pid('worker-1')!];
    process.kill(apiPid, 'SIGKILL');
    process.kill(workerPid, 'SIGKILL');
    await Promise.all(clients);
    const retried = ops.filter((o) => o.attempts > 1);
    process.stdout.write(`[faults] ${ops.length} operations (${['ingest', 'memory', 'query'].map((k) => `${ops.filter((o) => o.kind === k).length} ${k}`).join(', ')}), ` +
      `${retried.length} retried (${retried.map((o) => `${o.kind}×${o.attempts}`).join(' ')})\n`);

    const sql = sqlClient(cluster.databaseUrl);
    try {
      const byKind = (k: Op['kind']) => ops.filter((o) => o.kind === k);
      expect(ops.length).toBeGreaterThan(30);
      expect(ops.every((o) => o.result)).toBe(true);
      // The kill hit requests in flight: some were retried.
      expect(retried.length).toBeGreaterThan(0);

      // Every job and event reaches a terminal state (the killed worker's activities are retried by another),
      // and every credit reservation is settled.
      const deadline = Date.now() + 240_000;
      for (;;) {
        const open = await sql.count(`select 1 from ingest_job where account_id = $1 and status not in ('succeeded', 'failed', 'quarantined')
          union all select 1 from memory_event where account_id = $1 and status not in ('succeeded', 'failed')
          union all select 1 from credit_reservation where account_id = $1 and status = 'held'`, [accountId]);
        if (open === 0) break;
        if (Date.now() > deadline) throw new Error(`${open} jobs or events still open`);
        await sleep(1000);
      }

      const ingests = byKind('ingest');
      expect(new Set(ingests.map((o) => o.result.job.id)).size).toBe(ingests.length);
      expect(await sql.query('select idempotency_key as key, status from ingest_job where account_id = $1 order by 1', [accountId]))
        .toEqual(ingests.map((o) => ({ key: o.key, status: 'succeeded' })).sort((a, b) => a.key.localeCompare(b.key)));
      expect(await sql.count('select 1 from source where account_id = $1', [accountId])).toBe(ingests.length);
      expect(await sql.count(`select source_id from record where account_id = $1 group by source_id, kind, start_offset, end_offset having count(*) > 1`, [accountId])).toBe(0);
      expect(await sql.count('select 1 from source s where account_id = $1 and record_count <> (select count(*) from record r where r.source_id = s.id)', [accountId])).toBe(0);

      const writes = byKind('memory');
      expect(new Set(writes.map((o) => o.result.event_id)).size).toBe(writes.length);
      expect(await sql.query(`select idempotency_key as key, status from memory_event where account_id = $1 and kind = 'add_messages' order by 1`, [accountId]))
        .toEqual(writes.map((o) => ({ key: o.key, status: 'succeeded' })).sort((a, b) => a.key.localeCompare(b.key)));
      expect(await sql.count('select 1 from memory_message where account_id = $1', [accountId])).toBe(writes.length);
      expect(await sql.count('select message_id from memory_claim where account_id = $1 group by message_id, content having count(*) > 1', [accountId])).toBe(0);

      const queries = byKind('query');
      expect(await sql.query('select idempotency_key as key, status from query_operation where account_id = $1 order by 1', [accountId]))
        .toEqual(queries.map((o) => ({ key: o.key, status: 'completed' })).sort((a, b) => a.key.localeCompare(b.key)));
      expect(await sql.count('select 1 from credit_ledger where account_id = $1 group by kind, idempotency_key having count(*) > 1', [accountId])).toBe(0);
      expect((await verifyLedger(orm.em.fork(), accountId)).ok).toBe(true);
    } finally {
      await sql.close();
    }

    // The script started both again.
    expect([cluster.starts(home), cluster.starts('worker-1')]).toEqual([2, 2]);
    expect(cluster.pid(home)).not.toBe(apiPid);
    await expect(fetch(`http://127.0.0.1:${cluster.layout.api(home === 'api-1' ? 0 : 1).api}/readyz`).then((r) => r.status)).resolves.toBe(200);
  }, 600_000);
});
