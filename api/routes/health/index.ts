import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';

export type ReadinessCheck = () => Promise<void>;

const CheckResult = z.object({ ok: z.boolean(), latencyMs: z.number(), reason: z.string().optional() });
const Readiness = z
  .object({
    status: z.enum(['ready', 'not_ready']),
    checks: z.record(z.string(), CheckResult),
  })
  .meta({ id: 'Readiness' });

async function runCheck(check: ReadinessCheck, timeoutMs: number) {
  const started = performance.now();
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      check(),
      new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error('timeout')), timeoutMs);
      }),
    ]);
    return { ok: true, latencyMs: Math.round(performance.now() - started) };
  } catch (err) {
    // The reason stays generic on this unauthenticated route; details go to the log.
    const reason = (err as Error).message === 'timeout' ? 'timed out' : 'unreachable';
    return { ok: false, latencyMs: Math.round(performance.now() - started), reason, err };
  } finally {
    clearTimeout(timer);
  }
}

export const healthRoutes: FastifyPluginAsyncZod<{ checks: Record<string, ReadinessCheck>; timeoutMs?: number }> =
  async (app, opts) => {
    app.get(
      '/healthz',
      {
        schema: {
          tags: ['operations'],
          summary: 'Liveness: the process is up',
          response: { 200: z.object({ status: z.literal('ok') }) },
        },
      },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/readyz',
      {
        schema: {
          tags: ['operations'],
          summary: 'Readiness: PostgreSQL and Temporal are reachable',
          response: { 200: Readiness, 503: Readiness.extend(ErrorEnvelope.shape) },
        },
      },
      async (request, reply) => {
        const names = Object.keys(opts.checks);
        const results = await Promise.all(names.map((n) => runCheck(opts.checks[n]!, opts.timeoutMs ?? 2000)));
        const checks: Record<string, z.infer<typeof CheckResult>> = {};
        const failing: string[] = [];
        results.forEach((r, i) => {
          const name = names[i]!;
          if (!r.ok) {
            failing.push(name);
            request.log.warn({ check: name, err: r.err }, 'readiness check failed');
          }
          checks[name] = { ok: r.ok, latencyMs: r.latencyMs, ...(r.reason ? { reason: r.reason } : {}) };
        });
        if (failing.length === 0) return { status: 'ready' as const, checks };
        return reply.code(503).send({
          status: 'not_ready' as const,
          checks,
          error: {
            code: 'service_unavailable',
            message: `Not ready: ${failing.join(', ')} ${failing.length === 1 ? 'is' : 'are'} not reachable.`,
            requestId: request.id,
          },
        });
      },
    );
  };
