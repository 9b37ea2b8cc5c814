import { randomBytes, randomUUID } from 'node:crypto';
import pg from 'pg';
import { ensureDatabase } from '../../runners/postgres/embedded.ts';
import { createOrm, migrate, type Orm } from '../../platform/db/orm.ts';
import { scratchPostgres, scratchTemporal } from '../../test/helpers/ephemeral.ts';
import type { Logger } from '../../platform/logger.ts';

// The infrastructure a benchmark run needs, provided the way the test global setup does it:
// DATABASE_URL / TEMPORAL_ADDRESS when set, otherwise a throwaway embedded PostgreSQL in a temporary
// directory and a headless Temporal dev server. Each is started on first use only, once per run, and
// stopped by `stop()`; what a benchmark starts itself (database, API, worker) is undone when it ends.

export const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);


export type PostgresInfo = {
  /** A URL with rights to create databases; benchmarks create their own database from it. */
  adminUrl: string;
  source: 'embedded' | 'DATABASE_URL';
};

export class Infra {
  private cleanups: (() => Promise<unknown>)[] = [];
  /** What the running benchmark started (its database, API, worker): undone when it ends. */
  private benchmarkCleanups: (() => Promise<unknown>)[] = [];
  private postgresStarted: Promise<PostgresInfo> | undefined;
  private temporalStarted: Promise<string> | undefined;
  private stopping: Promise<void> | undefined;

  private defer(cleanup: () => Promise<unknown>, list = this.cleanups) {
    if (this.stopping) {
      // Started while stopping (an interrupted benchmark still finishing a step): undo it at once.
      void cleanup().catch(() => {});
      return;
    }
    list.push(cleanup);
  }

  postgres(): Promise<PostgresInfo> {
    this.postgresStarted ??= this.startPostgres();
    return this.postgresStarted;
  }

  temporal(): Promise<string> {
    this.temporalStarted ??= this.startTemporal();
    return this.temporalStarted;
  }

  private async startPostgres(): Promise<PostgresInfo> {
    const db = await scratchPostgres(log, 'cairn-bench-');
    this.defer(db.stop);
    return { adminUrl: db.adminUrl, source: db.source === 'env' ? 'DATABASE_URL' : 'embedded' };
  }

  private async startTemporal(): Promise<string> {
    const temporal = await scratchTemporal(log);
    this.defer(temporal.stop);
    return temporal.address;
  }

  /**
   * A new database named cairn_bench_<random>, migrated. It is dropped again when the benchmark ends
   * (so a shared DATABASE_URL server is left as it was found).
   */
  async freshDatabase(logger?: Logger): Promise<{ url: string; orm: Orm }> {
    const { adminUrl } = await this.postgres();
    const url = new URL(adminUrl);
    const name = `cairn_bench_${randomBytes(4).toString('hex')}`;
    url.pathname = `/${name}`;
    await ensureDatabase(url.toString());
    this.onStop(() => dropDatabase(adminUrl, name));
    const orm = await createOrm(url.toString(), logger);
    this.onStop(() => orm.close());
    await migrate(orm);
    return { url: url.toString(), orm };
  }

  /** What a benchmark that runs the API and a worker needs: its own database, Temporal, a task queue. */
  async backend(name: string): Promise<{ orm: Orm; databaseUrl: string; temporalAddress: string; taskQueue: string }> {
    const { orm, url: databaseUrl } = await this.freshDatabase();
    return { orm, databaseUrl, temporalAddress: await this.temporal(), taskQueue: `bench-${name}-${randomUUID()}` };
  }

  /**
   * Registers a cleanup of the running benchmark: it runs when the benchmark ends (`endBenchmark()`), or
   * at `stop()`, before what was started earlier. A worker left running with a backlog would otherwise
   * skew the benchmarks after it.
   */
  onStop(cleanup: () => Promise<unknown>) {
    this.defer(cleanup, this.benchmarkCleanups);
  }

  /** Undoes what the benchmark that just ended started; the shared PostgreSQL and Temporal stay up. */
  async endBenchmark(): Promise<void> {
    const cleanups = this.benchmarkCleanups;
    this.benchmarkCleanups = [];
    await undo(cleanups);
  }

  /** Stops everything started, in reverse order; later calls get the same promise. */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      await this.endBenchmark();
      const cleanups = this.cleanups;
      this.cleanups = [];
      await undo(cleanups);
    })();
    return this.stopping;
  }
}

/** Runs cleanups newest first; one that fails is logged and the rest still run. */
async function undo(cleanups: (() => Promise<unknown>)[]): Promise<void> {
  for (const c of cleanups.reverse()) await c().catch((err: unknown) => log(`cleanup failed: ${String(err)}`));
}

export async function dropDatabase(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists "${name}" with (force)`);
  } finally {
    await client.end();
  }
}
