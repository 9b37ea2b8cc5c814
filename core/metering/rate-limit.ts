import { dedicatedPool } from '../../platform/db/connections.ts';
import { RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import { DEFAULT_DEVICE_CODES_PER_HOUR, DEFAULT_REGISTRATIONS_PER_HOUR } from '../../platform/config.ts';
import { AppError } from '../../platform/errors.ts';
import type { Logger } from '../../platform/logger.ts';

export type RateLimiter = {
  /** One authenticated request of the account. */
  consume(accountId: string): Promise<void>;
  /** One dynamic OAuth client registration from the client address. */
  consumeRegistration(address: string): Promise<void>;
  /** One CLI device code created from the client address (it needs no credential). */
  consumeDeviceCode(address: string): Promise<void>;
  close(): Promise<void>;
};

/**
 * Request throttling kept in PostgreSQL, so all API processes share it (rate-limiter-flexible):
 * - account-wide (spec 5 rule 5): every credential of an account (API keys, CLI and browser sessions,
 *   MCP OAuth tokens) draws from one fixed one-minute window of `perMinute` requests, and creating or
 *   rotating a key changes nothing;
 * - per client address, dynamic OAuth client registrations: `registrationsPerHour` an hour, and CLI
 *   device codes (each a row until it expires): `deviceCodesPerHour` an hour.
 */
export function createRateLimiter(
  databaseUrl: string,
  perMinute: number,
  logger?: Logger,
  opts: { registrationsPerHour?: number; deviceCodesPerHour?: number } = {},
): RateLimiter {
  // Every request of an account updates the account's one window row, so requests queue on its lock;
  // committing without waiting for the disk flush releases it sooner. A crash can lose the last few
  // counts, which only lets a few more requests through in that minute.
  const pool = dedicatedPool(databaseUrl, { max: 4, options: '-c synchronous_commit=off' });
  // pg re-emits a dropped idle connection's error on the pool; without a listener that is an uncaught
  // exception that takes the API down (found by test/faults). The pool has already discarded the client.
  pool.on('error', (err) => logger?.warn({ err }, 'rate limiter: a database connection was dropped'));
  const limiter = (keyPrefix: string, points: number, duration: number, message: string) => {
    const flexible = new RateLimiterPostgres({ storeClient: pool, tableName: 'rate_limit', tableCreated: true, keyPrefix, points, duration });
    return async (key: string) => {
      try {
        await flexible.consume(key);
      } catch (res) {
        if (!(res instanceof RateLimiterRes)) throw res;
        throw new AppError(429, 'rate_limited', message, { 'retry-after': String(Math.max(1, Math.ceil(res.msBeforeNext / 1000))) });
      }
    };
  };
  const account = limiter('account', perMinute, 60, 'Too many requests for this account; slow down.');
  const registration = limiter(
    'oauth-registration',
    opts.registrationsPerHour ?? DEFAULT_REGISTRATIONS_PER_HOUR,
    3600,
    'Too many client registrations from this address; try again later.',
  );
  const deviceCode = limiter(
    'cli-device-code',
    opts.deviceCodesPerHour ?? DEFAULT_DEVICE_CODES_PER_HOUR,
    3600,
    'Too many sign-in codes from this address; try again later.',
  );
  return { consume: account, consumeRegistration: registration, consumeDeviceCode: deviceCode, close: () => pool.end() };
}
