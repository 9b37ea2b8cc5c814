import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors.ts';

export type RateLimiter = { consume(accountId: string): Promise<void>; close(): Promise<void> };

/**
 * Account-wide request throttling for product requests (spec 5 rule 5): every key of an account draws
 * from one window, kept in PostgreSQL so all API processes share it, and creating or rotating a key
 * changes nothing. Fixed one-minute windows of `perMinute` requests (rate-limiter-flexible).
 */
export function createRateLimiter(databaseUrl: string, perMinute: number): RateLimiter {
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4 });
  const limiter = new RateLimiterPostgres({
    storeClient: pool,
    tableName: 'rate_limit',
    tableCreated: true, // created by migration 0004
    keyPrefix: 'account',
    points: perMinute,
    duration: 60,
  });
  return {
    async consume(accountId) {
      try {
        await limiter.consume(accountId);
      } catch (res) {
        if (!(res instanceof RateLimiterRes)) throw res;
        throw new AppError(429, 'rate_limited', 'Too many requests for this account; slow down.', {
          'retry-after': String(Math.max(1, Math.ceil(res.msBeforeNext / 1000))),
        });
      }
    },
    close: () => pool.end(),
  };
}
