import { Context } from '@temporalio/activity';

/**
 * Heartbeats every few seconds while `work` runs, so Temporal retries the activity on another worker
 * soon after this one dies (heartbeat timeout) instead of waiting for the start-to-close timeout.
 * No heartbeat at the start: the server's heartbeat timeout already runs from the moment the activity
 * started, so a first heartbeat only cost an RPC and a history write for every short activity.
 */
export async function withHeartbeats<T>(work: () => Promise<T>): Promise<T> {
  const ctx = Context.current();
  const timer = setInterval(() => ctx.heartbeat(), 2000);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
