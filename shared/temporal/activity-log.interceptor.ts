import type { Context } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityInterceptors } from '@temporalio/worker';
import type { Logger } from '../logger.ts';

/**
 * Logs each activity attempt's outcome and duration with workflowId, runId, activity and attempt, so one
 * grep for a workflow id shows everything its activities did.
 */
export function activityLogInterceptor(logger: Logger) {
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
        try {
          const result = await next(input);
          log.info({ durationMs: Math.round(performance.now() - started) }, 'activity completed');
          return result;
        } catch (err) {
          log.warn({ err, durationMs: Math.round(performance.now() - started) }, 'activity failed');
          throw err;
        }
      },
    };
    return { inbound };
  };
}
