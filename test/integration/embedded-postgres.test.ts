import { existsSync, readFileSync } from 'node:fs';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';

// The embedded PostgreSQL (shared/db/embedded.ts) runs under SCHED_BATCH, and so does every backend it
// forks for a connection, so that statements do not preempt the API's event loop when written.

const SCHED_BATCH = 3;

/** A process's scheduling policy: field 41 of /proc/<pid>/stat. */
function policyOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[38]);
}

describe('embedded PostgreSQL', () => {
  it('serves each connection from a batch-scheduled backend', async () => {
    const client = new pg.Client({ connectionString: inject('adminDatabaseUrl') });
    await client.connect();
    try {
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      const pid = rows[0]!.pid;
      // An external DATABASE_URL is not ours to schedule: its backends are not processes here.
      if (process.env.DATABASE_URL && !existsSync(`/proc/${pid}`)) return;
      expect(policyOf(pid)).toBe(SCHED_BATCH);
      expect(policyOf(process.pid)).toBe(0); // this process keeps the default policy
    } finally {
      await client.end();
    }
  });
});
