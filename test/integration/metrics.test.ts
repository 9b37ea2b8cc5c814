import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiMetrics, createWorkerMetrics, serveMetrics } from '../../platform/ops/metrics.ts';
import { runSelfCheck } from '../../temporal/starts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

let db: TestDatabase;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(async () => {
  await temporal.close();
  await db.drop();
});

/** The value of one sample line of a Prometheus text exposition, or undefined. */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  const want = Object.entries(labels).map(([k, v]) => `${k}="${v}"`);
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && want.every((w) => l.includes(w)));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
}

describe('API /metrics', () => {
  it('serves request latency by route template and queue state from PostgreSQL when opened (METRICS_OPEN)', async () => {
    const api = await startApi({ orm: db.orm, temporal, metrics: createApiMetrics(db.orm), env: { METRICS_OPEN: 'true' } });
    try {
      await db.orm.em.fork().getConnection().execute(
        `insert into account (id, email, email_normalized, password_hash, monthly_credits, onboarding_credits, query_daily_limit,
           ingest_daily_limit, query_monthly_limit, ingest_monthly_limit) values (?, 'm@x.test', 'm@x.test', 'x', 1, 1, 1, 1, 1, 1)`,
        [randomUUID()],
      );
      const [acct] = await db.orm.em.fork().getConnection().execute<{ id: string }[]>(`select id from account where email = 'm@x.test'`);
      for (const status of ['queued', 'queued', 'failed']) {
        await db.orm.em.fork().getConnection().execute(
          `insert into ingest_job (id, account_id, kind, status, attempts, created_at, updated_at) values (?, ?, 'url', ?, 0, now(), now())`,
          [randomUUID(), acct!.id, status],
        );
      }
      for (let i = 0; i < 3; i++) expect((await fetch(`${api.baseUrl}/healthz`)).status).toBe(200);
      expect((await fetch(`${api.baseUrl}/v1/ingest/jobs/${randomUUID()}`)).status).toBe(401);

      const res = await fetch(`${api.baseUrl}/metrics`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
      const text = await res.text();
      expect(sample(text, 'cairn_http_request_duration_seconds_count', { route: '/healthz', status_code: '200' })).toBe(3);
      // The template, never the raw URL (ids would explode the label set).
      expect(sample(text, 'cairn_http_request_duration_seconds_count', { route: '/v1/ingest/jobs/:jobId', status_code: '401' })).toBe(1);
      expect(text).not.toMatch(/route="\/v1\/ingest\/jobs\/[0-9a-f]{8}-/);
      expect(sample(text, 'cairn_ingest_jobs', { status: 'queued', kind: 'url' })).toBe(2);
      expect(sample(text, 'cairn_ingest_jobs', { status: 'failed', kind: 'url' })).toBe(1);
      expect(text).toContain('cairn_api_process_resident_memory_bytes');
    } finally {
      await api.close();
    }
  });

  it('requires the bearer token when METRICS_TOKEN is set, and is absent without a registry', async () => {
    const token = 'metrics-token-0123456789';
    const api = await startApi({ orm: db.orm, temporal, metrics: createApiMetrics(db.orm), env: { METRICS_TOKEN: token } });
    const bare = await startApi({ orm: db.orm, temporal });
    try {
      const denied = await fetch(`${api.baseUrl}/metrics`);
      expect(denied.status).toBe(401);
      expect(((await denied.json()) as { error: { code: string } }).error.code).toBe('unauthorized');
      expect((await fetch(`${api.baseUrl}/metrics`, { headers: { authorization: 'Bearer wrong-token-0123456789' } })).status).toBe(401);
      expect((await fetch(`${api.baseUrl}/metrics`, { headers: { authorization: `Bearer ${token}` } })).status).toBe(200);
      expect((await fetch(`${bare.baseUrl}/metrics`)).status).toBe(404);
    } finally {
      await api.close();
      await bare.close();
    }
  });

  it("reports this process's index copies: bytes and accounts held, hits and misses", async () => {
    const metrics = createApiMetrics(db.orm, { usage: () => ({ accounts: 3, bytes: 123_456 }), lookups: () => ({ hits: 41, misses: 2 }) });
    const text = await metrics.registry.metrics();
    for (const [name, value] of [['cairn_query_index_bytes', 123456], ['cairn_query_index_accounts', 3], ['cairn_query_index_hits', 41], ['cairn_query_index_misses', 2]] as const) {
      expect(text).toMatch(new RegExp(`^${name} ${value}$`, 'm'));
    }
  });

  it('without a token and not opened, nobody may scrape, loopback clients included', async () => {
    const api = await startApi({ orm: db.orm, temporal, metrics: createApiMetrics(db.orm) });
    try {
      const res = await fetch(`${api.baseUrl}/metrics`); // from 127.0.0.1
      expect(res.status).toBe(403);
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('forbidden');
    } finally {
      await api.close();
    }
  });
});

describe('worker metrics', () => {
  it('counts activity attempts by type and outcome and serves them over HTTP', async () => {
    const metrics = createWorkerMetrics();
    const taskQueue = uniqueTaskQueue();
    const worker = await startWorker({ orm: db.orm, taskQueue, metrics });
    const token = 'worker-metrics-token-0123';
    const server = await serveMetrics(metrics.registry, '127.0.0.1', 0, { token, open: false });
    const closed = await serveMetrics(metrics.registry, '127.0.0.1', 0, { token: undefined, open: false });
    try {
      await runSelfCheck(temporal.client, taskQueue, { checkId: randomUUID(), requestedBy: 'metrics-test' });
      await runSelfCheck(temporal.client, taskQueue, { checkId: randomUUID(), requestedBy: 'metrics-test' });
      const { port } = server.address() as { port: number };
      expect((await fetch(`http://127.0.0.1:${port}/metrics`)).status).toBe(401);
      expect((await fetch(`http://127.0.0.1:${(closed.address() as { port: number }).port}/metrics`)).status).toBe(403);
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${token}` } })).text();
      expect(sample(text, 'cairn_activity_duration_seconds_count', { activity: 'recordSelfCheck', outcome: 'completed' })).toBe(2);
      expect((await fetch(`http://127.0.0.1:${port}/other`)).status).toBe(404);
    } finally {
      server.close();
      closed.close();
      await worker.stop();
    }
  });
});
