import { ApplicationFailure, type Context } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityInterceptors } from '@temporalio/worker';
import type { Logger } from '../platform/logger.ts';
import type { WorkerMetrics } from '../platform/ops/metrics.ts';

/**
 * Logs each activity attempt's outcome and duration with workflowId, runId, activity and attempt, so one
 * grep for a workflow id shows everything its activities did; with metrics, also observes the attempt's
 * duration by activity type and outcome.
 */
export function activityLogInterceptor(logger: Logger, metrics?: WorkerMetrics) {
  return (ctx: Context): ActivityInterceptors => {
    const { workflowExecution, activityType, attempt, activityId } = ctx.info;
    const log = logger.child({
      workflowId: workflowExecution?.workflowId,
      runId: workflowExecution?.runId,
      activity: activityType,
      activityId,
      attempt,
    });
    const inbound: ActivityInboundCallsInterceptor = {
      async execute(input, next) {
        const started = performance.now();
        const finish = (outcome: 'completed' | 'failed', err?: unknown) => {
          const ms = performance.now() - started;
          // A classified failure (a refused source, an HTTP 404) is an expected outcome: its type and
          // message say it all. Anything else is logged with its stack.
          if (outcome === 'failed' && err instanceof ApplicationFailure) {
            log.warn({ failure: { type: err.type, message: err.message, nonRetryable: err.nonRetryable }, durationMs: Math.round(ms) }, 'activity failed');
          } else if (outcome === 'failed') log.warn({ err, durationMs: Math.round(ms) }, 'activity failed');
          else log.info({ durationMs: Math.round(ms) }, 'activity completed');
          metrics?.activityDuration.observe({ activity: activityType, outcome }, ms / 1000);
        };
        try {
          const result = await next(input);
          finish('completed');
          return result;
        } catch (err) {
          finish('failed', err);
          throw err;
        }
      },
    };
    return { inbound };
  };
}
