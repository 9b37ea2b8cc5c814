import { Context } from '@temporalio/activity';

/**
 * Heartbeats every few seconds while `work` runs, so Temporal retries the activity on another worker
 * soon after this one dies (heartbeat timeout) instead of waiting for the start-to-close timeout.
 */
export async function withHeartbeats<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  ctx.heartbeat();
  const timer = setInterval(() => ctx.heartbeat(), 2000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
