import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';

// Connections outside MikroORM's pool, for the few things a pooled, ORM-managed connection cannot do
// (docs/decisions/0002-data-access.md). Everything else goes through the ORM's pool and platform/db/sql.ts.

/**
 * A session of its own, not yet connected; the caller connects and ends it. For LISTEN (notifications
 * arrive on the session that listens) and session-level advisory locks held across other work.
 */
export type DedicatedConnection = pg.Client;

export function dedicatedConnection(url: string, opts: { connectTimeoutMs?: number } = {}): pg.Client {
  return new pg.Client({ connectionString: url, ...(opts.connectTimeoutMs ? { connectionTimeoutMillis: opts.connectTimeoutMs } : {}) });
}

/** LISTEN on a dedicated connection (`channel` from code): notifications arrive as its 'notification' events. */
export async function listen(client: DedicatedConnection, channel: string): Promise<void> {
  await client.query(`listen ${channel}`);
}

/** A pool of its own, for a library that takes a node-postgres pool (the rate limiter's). */
export function dedicatedPool(url: string, opts: { max: number; options?: string }): pg.Pool {
  return new pg.Pool({ connectionString: url, max: opts.max, ...(opts.options ? { options: opts.options } : {}) });
}

/** Connects to `url` and runs `select 1`: throws node-postgres's error (with its code) when it cannot. */
export async function probeDatabase(url: string, connectTimeoutMs: number): Promise<void> {
  const client = dedicatedConnection(url, { connectTimeoutMs });
  try {
    await client.connect();
    await client.query('select 1');
  } finally {
    await client.end().catch(() => {});
  }
}

const notifying = new WeakMap<object, Map<string, { inFlight: boolean; again: boolean }>>();

/**
 * NOTIFY `channel` on the EntityManager's pool, in a statement of its own (outside any transaction):
 * a transaction that notifies holds PostgreSQL's global notify lock through its commit's disk flush,
 * which makes concurrent writers commit one at a time. One notification per pool and
 * channel is in flight at most; calls meanwhile ask for one more, sent when it returns, so a burst
 * costs a few notifications, not one each. Failures are dropped: callers keep an outbox that their
 * listeners also poll.
 */
export function notifyCoalesced(em: EntityManager, channel: string): void {
  const connection = em.getConnection();
  let channels = notifying.get(connection);
  if (!channels) notifying.set(connection, (channels = new Map()));
  let state = channels.get(channel);
  if (!state) channels.set(channel, (state = { inFlight: false, again: false }));
  if (state.inFlight) {
    state.again = true;
    return;
  }
  const s = state;
  s.inFlight = true;
  const send = (): void => {
    s.again = false;
    void connection.getNativeClient()
      .then((pool) => pool.query('select pg_notify($1, $2)', [channel, '']))
      .catch(() => {}) // the caller's poll covers a lost notification
      .finally(() => (s.again ? send() : (s.inFlight = false)));
  };
  send();
}
