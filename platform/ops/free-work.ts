import { AppError } from '../errors.ts';

/**
 * Free work (dry runs, memory reads) one account may have in flight in this process (issue 24). It
 * costs no credits, so nothing else stops one account from keeping every extraction process and
 * database connection of an API busy: past the limit its requests get 429 rate_limited (retry-after 1)
 * while other accounts' requests go on. A per-process bound protects each process's own capacity,
 * which is what it is for; the account-wide request rate is the rate limiter's.
 */
export type FreeWorkLimiter = { run<T>(accountId: string, work: () => Promise<T>): Promise<T> };

export function createFreeWorkLimiter(perAccount: number): FreeWorkLimiter {
  const running = new Map<string, number>();
  return {
    async run(accountId, work) {
      const now = running.get(accountId) ?? 0;
      if (now >= perAccount) {
        throw new AppError(429, 'rate_limited', `This account already has ${perAccount} dry runs or memory reads in progress; retry when one has finished.`, {
          'retry-after': '1',
        });
      }
      running.set(accountId, now + 1);
      try {
        return await work();
      } finally {
        const left = running.get(accountId)! - 1;
        if (left > 0) running.set(accountId, left);
        else running.delete(accountId);
      }
    },
  };
}
