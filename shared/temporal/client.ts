import { Client, Connection } from '@temporalio/client';

export type TemporalClientHandle = {
  client: Client;
  connection: Connection;
  /** Reports whether the server answers its health check; used by /readyz. */
  ping(timeoutMs?: number): Promise<void>;
  /**
   * Runs a call nobody waits for (a workflow start after the response went out), with a deadline.
   * close() cancels such calls and waits for them: a call still retrying when the channel closes would
   * otherwise throw from a gRPC timer, uncatchable, and take the process down. The SDK's retries ignore
   * cancellation between attempts, so the deadline is what bounds that wait.
   */
  detach(work: () => Promise<unknown>): void;
  close(): Promise<void>;
};

/**
 * A lazily connected client: the API starts (and reports not-ready) while Temporal is still coming up,
 * and reconnects by itself when it returns.
 */
export function createTemporalClient(address: string, namespace: string, opts: { detachedDeadlineMs?: number } = {}): TemporalClientHandle {
  const detachedDeadlineMs = opts.detachedDeadlineMs ?? 10_000;
  const connection = Connection.lazy({ address, connectTimeout: '5s' });
  const client = new Client({ connection, namespace });
  const closing = new AbortController();
  const inFlight = new Set<Promise<unknown>>();
  return {
    client,
    connection,
    async ping(timeoutMs = 2000) {
      const deadline = new Date(Date.now() + timeoutMs);
      await connection.withDeadline(deadline, async () => {
        await connection.ensureConnected();
        const res = await connection.healthService.check({});
        // 1 = SERVING in grpc.health.v1.HealthCheckResponse.ServingStatus
        if (res.status !== 1) throw new Error(`Temporal health status ${String(res.status)}`);
      });
    },
    detach(work) {
      if (closing.signal.aborted) return;
      const deadline = new Date(Date.now() + detachedDeadlineMs);
      const p = connection.withDeadline(deadline, () => connection.withAbortSignal(closing.signal, work))
        .catch(() => {})
        .finally(() => inFlight.delete(p));
      inFlight.add(p);
    },
    async close() {
      closing.abort();
      await Promise.allSettled([...inFlight]);
      await connection.close();
    },
  };
}
