import { randomUUID } from 'node:crypto';
import { temporalAddressFor } from '../../../runners/local/infra.ts';
import { createTemporalClient } from '../../../temporal/client.ts';
import { runSelfCheck } from '../../../temporal/starts.ts';
import type { AdminCommand } from '../registry.ts';

export const selfcheckCommand: AdminCommand = {
  name: 'selfcheck',
  summary: 'Run a workflow through Temporal and a worker that writes to PostgreSQL; prints the result.',
  usage: 'selfcheck [--timeout-ms N]',
  options: { 'timeout-ms': { type: 'string' } },
  async run(ctx, args) {
    const temporal = createTemporalClient(temporalAddressFor(ctx.config), ctx.config.temporal.namespace);
    try {
      const timeout = Number(args.values['timeout-ms'] ?? 30_000);
      const result = await runSelfCheck(temporal.client, ctx.config.temporal.taskQueue, {
        checkId: randomUUID(),
        requestedBy: 'admin',
        timeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : 30_000,
      });
      ctx.out({ ok: true, ...result });
    } finally {
      await temporal.close();
    }
  },
};
