import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../errors.ts';

export type ThrottleRule = { key: string; max: number };

/**
 * Failed sign-in throttling in PostgreSQL (shared by every API process). A key is blocked once it has
 * `max` failures inside the window; the window restarts after it elapses.
 */
export async function assertNotThrottled(em: EntityManager, rules: ThrottleRule[], windowMs: number): Promise<void> {
  const rows = await em.getConnection().execute<{ key: string; failures: number; window_started_at: Date }[]>(
    `select key, failures, window_started_at from auth_throttle where key in (?)`,
    [rules.map((r) => r.key)],
  );
  const now = Date.now();
  for (const row of rows) {
    const rule = rules.find((r) => r.key === row.key)!;
    const windowEnds = new Date(row.window_started_at).getTime() + windowMs;
    if (windowEnds > now && row.failures >= rule.max) {
      const retryAfter = Math.max(1, Math.ceil((windowEnds - now) / 1000));
      throw new AppError(429, 'rate_limited', 'Too many failed sign-in attempts. Try again later.', {
        'retry-after': String(retryAfter),
      });
    }
  }
}

export async function recordFailure(em: EntityManager, keys: string[], windowMs: number): Promise<void> {
  for (const key of keys) {
    await em.getConnection().execute(
      `insert into auth_throttle (key, window_started_at, failures) values (?, now(), 1)
       on conflict (key) do update set
         failures = case when auth_throttle.window_started_at < now() - (? * interval '1 millisecond')
                         then 1 else auth_throttle.failures + 1 end,
         window_started_at = case when auth_throttle.window_started_at < now() - (? * interval '1 millisecond')
                         then now() else auth_throttle.window_started_at end`,
      [key, windowMs, windowMs],
    );
  }
}

export async function clearFailures(em: EntityManager, keys: string[]): Promise<void> {
  await em.getConnection().execute('delete from auth_throttle where key in (?)', [keys]);
}
