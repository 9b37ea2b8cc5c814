import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The reservations' statements (credit_reservation, and the metering functions, platform/db/functions/cairn_reserve.sql
// and cairn_settle.sql, that reserve and settle in one round trip); the protocol is in reservations.ts.

/**
 * Calls a metering function with `args`: one row. With `flushLater` its transaction commits without
 * waiting for the WAL to reach the disk (synchronous_commit off for that transaction only), so the lock
 * on the account's balance row, which every concurrent request of the account waits for, is released at
 * once instead of after a disk flush. Only for callers whose next step is a synchronous commit that must
 * succeed before anything about the outcome leaves the process: WAL is flushed in order, so that commit
 * makes this one durable too, and if the database crashes before it, nothing was answered and an
 * unsettled reservation that survived is settled by the sweeper as usual.
 */
export async function callMetering<T>(
  em: EntityManager,
  fn: 'cairn_reserve' | 'cairn_settle',
  args: unknown[],
  flushLater: boolean | undefined,
): Promise<T> {
  const sync = flushLater ? sql.raw(", set_config('synchronous_commit', 'off', true) c") : sql.empty;
  const [row] = await bound<T>(em, sql`select f.* from ${sql.raw(fn)}(${sql.join(args)}) f${sync}`);
  return row!;
}

/**
 * Held reservations created more than `olderThanMs` ago, oldest first, but for those whose
 * provider-backed preview (provider_preview, id = its reservation's) is running and heartbeat within
 * that time: the work is alive and settles its own reservation.
 */
export async function heldReservationsBefore(em: EntityManager, olderThanMs: number, limit: number) {
  return bound<{ id: string }>(em, sql`select r.id from credit_reservation r where r.status = 'held'
      and r.created_at < now() - ${olderThanMs} * interval '1 millisecond'
      and not exists (select 1 from provider_preview p where p.id = r.id and p.status = 'running'
                        and p.heartbeat_at >= now() - ${olderThanMs} * interval '1 millisecond')
    order by r.created_at limit ${limit}`);
}

/** A reservation's status and (once settled) outcome. */
export async function reservationOf(em: EntityManager, id: string) {
  const [row] = await bound<{ status: 'held' | 'settled'; outcome: string | null }>(em, sql`select status, outcome from credit_reservation where id = ${id}`);
  return row;
}
