import { timingSafeEqual } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { EntityManager } from '@mikro-orm/postgresql';
import { Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Orm } from '../db/orm.ts';
import {
  ingestJobCounts,
  memoryEventCounts,
  overdueReservationCounts,
  reservationCounts,
  type CountRow,
} from './metrics.queries.ts';

// Prometheus metrics. Each process builds its own registry (no global default registry), so tests can
// run several apps in one process. Work-queue state is read from PostgreSQL at scrape time: it is the
// same for every api process and survives restarts, unlike in-process counters.

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const ACTIVITY_BUCKETS = [0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600];

/** One gauge per table state, refreshed on every scrape. */
function stateGauge(
  registry: Registry,
  orm: Orm,
  { name, help, labelNames, count }: { name: string; help: string; labelNames: string[]; count: (em: EntityManager) => Promise<CountRow[]> },
) {
  return new Gauge({
    name,
    help,
    labelNames,
    registers: [registry],
    async collect() {
      const rows = await count(orm.em.fork());
      this.reset();
      for (const r of rows) {
        const labels: Record<string, string> = { [labelNames[0]!]: r.label };
        if (labelNames[1]) labels[labelNames[1]] = r.kind ?? '';
        this.set(labels, Number(r.n));
      }
    },
  });
}

/** What the API's query index copies report (core/retrieval/search-index.ts). */
type IndexCopies = { usage(): { accounts: number; bytes: number }; lookups(): { hits: number; misses: number } };

export function createApiMetrics(orm: Orm, index?: IndexCopies) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'cairn_api_' });
  const httpDuration = new Histogram({
    name: 'cairn_http_request_duration_seconds',
    help: 'HTTP request latency by route template and status code',
    labelNames: ['method', 'route', 'status_code'],
    buckets: LATENCY_BUCKETS,
    registers: [registry],
  });
  stateGauge(registry, orm, {
    name: 'cairn_ingest_jobs', help: 'Ingest jobs by status and kind (queued = queue depth)',
    labelNames: ['status', 'kind'], count: ingestJobCounts,
  });
  stateGauge(registry, orm, {
    name: 'cairn_memory_events', help: 'Memory events by status and kind (queued and running = queue depth)',
    labelNames: ['status', 'kind'], count: memoryEventCounts,
  });
  stateGauge(registry, orm, {
    name: 'cairn_credit_reservations', help: 'Credit reservations by status (held = not yet settled)',
    labelNames: ['status'], count: reservationCounts,
  });
  stateGauge(registry, orm, {
    name: 'cairn_credit_reservations_overdue', help: 'Held credit reservations older than one hour: settlement is lagging',
    labelNames: ['status'], count: overdueReservationCounts,
  });
  if (index) indexGauges(registry, index);
  return { registry, httpDuration };
}
export type ApiMetrics = ReturnType<typeof createApiMetrics>;

/** This process's index copies: bytes and accounts held, and queries answered from a copy or left to PostgreSQL. */
function indexGauges(registry: Registry, index: IndexCopies) {
  const gauge = (name: string, help: string, read: () => number) =>
    new Gauge({ name, help, registers: [registry], collect() { this.set(read()); } });
  gauge('cairn_query_index_bytes', 'Estimated bytes of the account index copies this API process holds', () => index.usage().bytes);
  gauge('cairn_query_index_accounts', 'Accounts whose index copy this API process holds', () => index.usage().accounts);
  gauge('cairn_query_index_hits', 'Queries ranked from this process\'s index copy since it started', () => index.lookups().hits);
  gauge('cairn_query_index_misses', 'Queries this process left to PostgreSQL (no current copy in time) since it started', () => index.lookups().misses);
}

export function createWorkerMetrics() {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'cairn_worker_' });
  const activityDuration = new Histogram({
    name: 'cairn_activity_duration_seconds',
    help: 'Activity attempts by activity type and outcome (completed, failed)',
    labelNames: ['activity', 'outcome'],
    buckets: ACTIVITY_BUCKETS,
    registers: [registry],
  });
  return { registry, activityDuration };
}
export type WorkerMetrics = ReturnType<typeof createWorkerMetrics>;

/** Who may scrape: a bearer token (METRICS_TOKEN), or anyone when the operator opened it (METRICS_OPEN). */
export type MetricsAccess = { token: string | undefined; open: boolean };

/**
 * Whether a scrape may read the metrics (they name routes, volumes and queue depths): with a token,
 * only a request carrying it (compared in constant time); without one, only when explicitly opened.
 */
export function scrapeVerdict(access: MetricsAccess, authorization: string | undefined): 'ok' | 'no_token' | 'closed' {
  if (access.token) {
    const given = Buffer.from(authorization?.startsWith('Bearer ') ? authorization.slice(7) : '');
    const expected = Buffer.from(access.token);
    return given.length === expected.length && timingSafeEqual(given, expected) ? 'ok' : 'no_token';
  }
  return access.open ? 'ok' : 'closed';
}

/** A tiny HTTP server for a process without an HTTP API of its own (the worker): GET /metrics only. */
export async function serveMetrics(registry: Registry, host: string, port: number, access: MetricsAccess): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404).end();
      return;
    }
    const verdict = scrapeVerdict(access, req.headers.authorization);
    if (verdict !== 'ok') {
      res.writeHead(verdict === 'no_token' ? 401 : 403).end();
      return;
    }
    registry.metrics().then(
      (body) => res.writeHead(200, { 'content-type': registry.contentType }).end(body),
      () => res.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
