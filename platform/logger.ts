import { pino, type Logger, type LoggerOptions } from 'pino';
import type { Config } from './config.ts';

export type { Logger };

/**
 * Paths that may carry secrets anywhere we log: request headers (keys, cookies), bodies with passwords,
 * and key material returned once to a user. pino replaces them with "[redacted]".
 */
export const redactPaths = [
  'req.headers.authorization',
  'req.headers.cookie',
  'req.headers["x-api-key"]',
  'res.headers["set-cookie"]',
  'headers.authorization',
  'headers.cookie',
  '*.password',
  '*.token',
  '*.secret',
  '*.apiKey',
  '*.rawKey',
  '*.deviceCode',
  'password',
  'token',
  'secret',
  'apiKey',
  'rawKey',
  'deviceCode',
];

export function createLogger(
  config: Pick<Config, 'logLevel'>,
  options: { name?: string; destination?: pino.DestinationStream } = {},
): Logger {
  const opts: LoggerOptions = {
    level: config.logLevel,
    redact: { paths: redactPaths, censor: '[redacted]' },
    base: { service: 'cairn', ...(options.name ? { process: options.name } : {}) },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return options.destination ? pino(opts, options.destination) : pino(opts);
}
