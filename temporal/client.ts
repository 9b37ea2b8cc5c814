import { Client, Connection } from '@temporalio/client';

export type TemporalClientHandle = {
  client: Client;
  connection: Connection;
  /** Reports whether the server answers its health check; used by /readyz. */
  ping(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
};

/**
 * A lazily connected client: the API starts (and reports not-ready) while Temporal is still coming up,
 * and reconnects by itself when it returns.
 */
export function createTemporalClient(address: string, namespace: string): TemporalClientHandle {
  const connection = Connection.lazy({ address, connectTimeout: '5s' });
  const client = new Client({ connection, namespace });
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
    async close() {
      await connection.close();
    },
  };
}
