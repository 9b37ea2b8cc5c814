import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The sign-in throttle's statements (auth_throttle); the rules are in throttle.ts.

/** The key's row (made on first use), locked for update, with the database's clock. */
export async function lockThrottleKey(tx: EntityManager, key: string) {
  await bound(tx, sql`insert into auth_throttle (key, failures, blocked_until) values (${key}, 0, now()) on conflict (key) do nothing`);
  const [row] = await bound<{ failures: number; blocked_until: Date; now: Date }>(tx,
    sql`select failures, blocked_until, now() as now from auth_throttle where key = ${key} for update`);
  return row!;
}

export async function setThrottle(tx: EntityManager, key: string, failures: number, waitMs: number): Promise<void> {
  await bound(tx, sql`update auth_throttle set failures = ${failures}, blocked_until = now() + ${waitMs} * interval '1 millisecond' where key = ${key}`);
}

/** The key waits at least `waitMs` from now. */
export async function extendWait(em: EntityManager, key: string, waitMs: number): Promise<void> {
  await bound(em, sql`update auth_throttle set blocked_until = greatest(blocked_until, now() + ${waitMs} * interval '1 millisecond') where key = ${key}`);
}

export async function clearThrottle(tx: EntityManager, keys: string[]): Promise<void> {
  await bound(tx, sql`delete from auth_throttle where key = any(${keys}::text[])`);
}

/** One failure fewer; a key back within its `free` attempts waits no longer. */
export async function takeBackAttempt(tx: EntityManager, key: string, free: number): Promise<void> {
  await bound(tx, sql`update auth_throttle set failures = greatest(failures - 1, 0),
      blocked_until = case when failures - 1 < ${free} then least(blocked_until, now()) else blocked_until end
    where key = ${key}`);
}
