import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { AppError } from '../errors.ts';
import type { Logger } from '../logger.ts';

export type RateLimiter = { consume(accountId: string): Promise<void>; close(): Promise<void> };

/**
 * Account-wide request throttling (spec 5 rule 5): every credential of an account (API keys, CLI and
 * browser sessions, MCP OAuth tokens) draws from one window, kept in PostgreSQL so all API processes
 * share it, and creating or rotating a key changes nothing. Fixed one-minute windows of `perMinute`
 * requests (rate-limiter-flexible).
 */
export function createRateLimiter(databaseUrl: string, perMinute: number, logger?: Logger): RateLimiter {
  // Every request of an account updates the account's one window row, so requests queue on its lock;
  // committing without waiting for the disk flush releases it sooner. A crash can lose the last few
  // counts, which only lets a few more requests through in that minute.
  const pool = new pg.Pool({ connectionString: databaseUrl, max: 4, options: '-c synchronous_commit=off' });
  // pg re-emits a dropped idle connection's error on the pool; without a listener that is an uncaught
  // exception that takes the API down (found by test/faults). The pool has already discarded the client.
  pool.on('error', (err) => logger?.warn({ err }, 'rate limiter: a database connection was dropped'));
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
