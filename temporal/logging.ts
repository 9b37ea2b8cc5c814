import { Runtime, makeTelemetryFilterString, type LogLevel, type LogMetadata } from '@temporalio/worker';
import type { Logger as TemporalLogger } from '@temporalio/common';
import type { Logger } from '../platform/logger.ts';

const levelMap: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Adapts pino to Temporal's Logger interface so SDK, activity and core logs share one stream. */
export function temporalLoggerFromPino(logger: Logger): TemporalLogger {
  const log = (level: LogLevel, message: string, meta?: LogMetadata) => logger[levelMap[level]](meta ?? {}, message);
  return {
    log,
    trace: (m, meta) => log('TRACE', m, meta),
    debug: (m, meta) => log('DEBUG', m, meta),
    info: (m, meta) => log('INFO', m, meta),
    warn: (m, meta) => log('WARN', m, meta),
    error: (m, meta) => log('ERROR', m, meta),
  };
}

let installed = false;

/** Installs the Temporal runtime once per process, forwarding Rust core logs to pino at WARN and above. */
export function installTemporalRuntime(logger: Logger): void {
  if (installed) return;
  Runtime.install({
    logger: temporalLoggerFromPino(logger.child({ component: 'temporal' })),
    telemetryOptions: {
      logging: { filter: makeTelemetryFilterString({ core: 'WARN' }), forward: {} },
    },
  });
  installed = true;
}
