import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import { forbidden, unauthorized } from '../../shared/errors.ts';
import type { ApiMetrics } from '../../shared/ops/metrics.ts';

const LOOPBACK = /^(127\.\d{1,3}\.\d{1,3}\.\d{1,3}|::1|::ffff:127\.\d{1,3}\.\d{1,3}\.\d{1,3})$/;

function sameSecret(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/**
 * GET /metrics in Prometheus text format. With METRICS_TOKEN set, a scraper sends it as a bearer token;
 * without one, only clients on the loopback interface may scrape (the metrics name routes and volumes).
 * The latency hook is global (fastify-plugin), so every route is measured by its template, never its raw URL.
 */
export const metricsPlugin = fp(async (app: FastifyInstance, opts: { metrics: ApiMetrics; token: string | undefined }) => {
  const authorize = (request: FastifyRequest) => {
    if (opts.token) {
      const header = request.headers.authorization ?? '';
      if (!header.startsWith('Bearer ') || !sameSecret(header.slice(7), opts.token)) throw unauthorized('The metrics token is required.');
      return;
    }
    if (!LOOPBACK.test(request.socket.remoteAddress ?? '')) throw forbidden('Metrics are served to loopback clients unless METRICS_TOKEN is set.');
  };

  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    opts.metrics.httpDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    authorize(request);
    const body = await opts.metrics.registry.metrics();
    return reply.header('content-type', opts.metrics.registry.contentType).send(body);
  });
});
