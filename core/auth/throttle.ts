import type { EntityManager } from '@mikro-orm/postgresql';
import { AppError } from '../../platform/errors.ts';
import { clearThrottle, extendWait, lockThrottleKey, setThrottle, takeBackAttempt } from './throttle.queries.ts';

/**
 * A throttled key (one account and client address pair, or one client address): `free` failures pass
 * at once; after the n-th failure from there on (n = 1, 2, ...) the key waits `wait(n)` ms before it may
 * try again.
 */
export type ThrottleRule = { key: string; free: number; wait(excess: number): number };

/**
 * Counts one sign-in attempt against every rule before the password is checked, in one transaction
 * with the keys' rows locked (always in key order), so concurrent attempts are counted one after the
 * other and none passes a check another has already used up. A key that must still wait refuses the
 * attempt (429 with retry-after) and the transaction counts nothing. A key's count is forgotten once
 * it has been quiet for `quietMs` after its last wait ended. Shared by every API process (PostgreSQL).
 * Returns the wait each key now has, which `failedAttempt` counts again from the failure.
 */
export async function claimAttempt(em: EntityManager, rules: ThrottleRule[], quietMs: number): Promise<Map<string, number>> {
  const waits = new Map<string, number>();
  await em.transactional(async (tx) => {
    for (const rule of [...rules].sort((a, b) => a.key.localeCompare(b.key))) {
      const row = await lockThrottleKey(tx, rule.key);
      const now = new Date(row!.now).getTime();
      const blockedUntil = new Date(row!.blocked_until).getTime();
      if (blockedUntil > now) {
        throw new AppError(429, 'rate_limited', 'Too many failed sign-in attempts. Try again later.', {
          'retry-after': String(Math.max(1, Math.ceil((blockedUntil - now) / 1000))),
        });
      }
      const failures = (now - blockedUntil > quietMs ? 0 : row!.failures) + 1;
      const wait = failures >= rule.free ? rule.wait(failures - rule.free + 1) : 0;
      await setThrottle(tx, rule.key, failures, wait);
      waits.set(rule.key, wait);
    }
  });
  return waits;
}

/** After a failed attempt: each key's wait runs from now, the failure's answer, not from the claim. */
export async function failedAttempt(em: EntityManager, waits: Map<string, number>): Promise<void> {
  for (const [key, wait] of waits) {
    if (wait > 0) {
      await extendWait(em, key, wait);
    }
  }
}

/**
 * After a successful sign-in: the attempt counted by `claimAttempt` is taken back from every rule
 * (a key back within its free attempts waits no longer), and the `clear` keys start afresh.
 */
export async function releaseAttempt(em: EntityManager, rules: ThrottleRule[], clear: string[]): Promise<void> {
  await em.transactional(async (tx) => {
    await clearThrottle(tx, clear);
    for (const rule of rules.filter((r) => !clear.includes(r.key))) await takeBackAttempt(tx, rule.key, rule.free);
  });
}
