import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { FastifyInstance } from 'fastify';
import { Writable } from 'node:stream';
import { inject } from 'vitest';
import { buildApp } from '../../api/app.ts';
import { loadConfig, type Config } from '../../platform/config.ts';
import { pingDatabase, type Orm } from '../../platform/db/orm.ts';
import { createLogger, type Logger } from '../../platform/logger.ts';
import type { RateLimiter } from '../../core/metering/rate-limit.ts';
import type { ApiMetrics, WorkerMetrics } from '../../platform/ops/metrics.ts';
import { createTemporalClient, type TemporalClientHandle } from '../../temporal/client.ts';
import { searchIndexFor } from '../../core/retrieval/search-index.ts';
import { extractionPoolFor } from '../../core/ingest/extraction/pool.ts';
import { inProcessExtraction } from './in-process-extraction.ts';
import { createFreeWorkLimiter } from '../../platform/ops/free-work.ts';
import { createWorker, workerIdentity, type CairnWorker, type WorkerDeps } from '../../temporal/worker.ts';
import { createActivities, type ActivityDeps } from '../../activities/index.ts';
import { startMemoryDispatcher, type DispatcherOptions } from '../../core/memory/dispatcher.ts';
import { createEmbedder } from '../../core/retrieval/embeddings.ts';
import type { EmbeddingsConfig } from '../../platform/config.ts';
import { workflowStarts } from '../../temporal/starts.ts';

/** A logger whose lines are kept in memory, so tests can assert on what was (not) logged. */
export function memoryLogger(level: 'info' | 'debug' | 'warn' = 'warn'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: createLogger({ logLevel: level }, { destination }), lines };
}

export const uniqueTaskQueue = () => `test-${randomBytes(5).toString('hex')}`;

export function testTemporalClient(): TemporalClientHandle {
  return createTemporalClient(inject('temporalAddress'), 'default');
}

/** The API on a free port over real HTTP, wired like bin/api.ts. */
export async function startApi(opts: {
  orm: Orm;
  temporal: TemporalClientHandle;
  logger?: Logger;
  env?: NodeJS.ProcessEnv;
  taskQueue?: string;
  rateLimiter?: RateLimiter;
  metrics?: ApiMetrics;
}): Promise<{ app: FastifyInstance; baseUrl: string; config: Config; close(): Promise<void> }> {
  const config = loadConfig({ PORT: '8080', TEMPORAL_TASK_QUEUE: opts.taskQueue ?? 'unused', ...opts.env });
  const extraction = extractionPoolFor(config);
  const app = await buildApp({
    config,
    extraction,
    freeWork: createFreeWorkLimiter(config.freeWorkPerAccount),
    orm: opts.orm,
    temporal: opts.temporal,
    rateLimiter: opts.rateLimiter,
    metrics: opts.metrics,
    searchIndex: searchIndexFor(config, opts.orm),
    logger: opts.logger ?? memoryLogger().logger,
    readiness: { postgres: () => pingDatabase(opts.orm), temporal: () => opts.temporal.ping() },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = app.server.address() as { port: number };
  // Browser-session writes must come from an allowed origin: the test server's own.
  config.allowedOrigins.push(`http://127.0.0.1:${port}`);
  return {
    app, baseUrl: `http://127.0.0.1:${port}`, config,
    async close() {
      await app.close();
      await extraction.close();
    },
  };
}

/** A real worker on its own task queues (derived from `taskQueue`), wired like bin/worker.ts, using the run's prebuilt workflow bundle. */
export async function startWorker(opts: {
  orm: Orm; taskQueue: string; logger?: Logger; urlAllowlist?: string[]; metrics?: WorkerMetrics;
  memoryDeriver?: ActivityDeps['memoryDeriver']; embeddings?: EmbeddingsConfig | null; settlementGraceMs?: number; memoryDispatch?: DispatcherOptions;
  slots?: WorkerDeps['slots']; env?: NodeJS.ProcessEnv;
}) {
  const code = await readFile(inject('workflowBundlePath'), 'utf8');
  const config = loadConfig({ ...opts.env });
  const extraction = extractionPoolFor(config);
  const logger = opts.logger ?? memoryLogger().logger;
  const identity = workerIdentity();
  const activities = createActivities({
    orm: opts.orm,
    logger: logger.child({ component: 'activities' }),
    workerIdentity: identity,
    ingest: {
      urlAllowlist: opts.urlAllowlist ?? [], fetchTimeoutMs: 10_000, ocrCreditsPerPage: config.ocr.creditsPerPage,
      shares: { slots: opts.slots?.ingest ?? config.worker.slots.ingest, largeBytes: config.ingestLargeBytes },
    },
    extraction,
    memoryDeriver: opts.memoryDeriver,
    embedder: opts.embeddings ? createEmbedder(opts.embeddings) : null,
  });
  const handle: CairnWorker = await createWorker({
    logger,
    identity,
    activities,
    background: (client) => startMemoryDispatcher({ orm: opts.orm, batches: workflowStarts(client, opts.taskQueue).memoryBatches, logger, ...opts.memoryDispatch }),
    temporalAddress: inject('temporalAddress'),
    namespace: 'default',
    taskQueue: opts.taskQueue,
    workflowBundle: { code },
    metrics: opts.metrics,
    settlementGraceMs: opts.settlementGraceMs,
    slots: opts.slots,
  });
  const running = handle.run();
  return {
    ...handle,
    extraction,
    async stop() {
      await handle.background.stop();
      handle.shutdown();
      await running;
      await handle.connection.close();
      await extraction.close();
    },
  };
}

/**
 * Dependencies for app tests that never reach the database or Temporal (error envelope, OpenAPI): both
 * connect lazily, so nothing is contacted unless a route needs it.
 */
export async function offlineDeps() {
  const { createOrm } = await import('../../platform/db/orm.ts');
  const config = loadConfig({});
  return {
    orm: await createOrm('postgres://offline@127.0.0.1:9/offline'),
    temporal: createTemporalClient('127.0.0.1:9', 'default'),
    // These tests extract nothing.
    extraction: inProcessExtraction(config.extraction.limits),
    freeWork: createFreeWorkLimiter(config.freeWorkPerAccount),
  };
}
