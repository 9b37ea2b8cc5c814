import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { forbidden, unauthorized } from '../../platform/errors.ts';
import { scrapeVerdict, type ApiMetrics, type MetricsAccess } from '../../platform/ops/metrics.ts';

/**
 * GET /metrics in Prometheus text format, for a scraper that sends METRICS_TOKEN as a bearer token;
 * without a token it answers only when the operator opened it (METRICS_OPEN=true), never by where the
 * request comes from. The latency hook is global (fastify-plugin), so every route is measured by its
 * template, never its raw URL.
 */
export const metricsPlugin = fp(async (app: FastifyInstance, opts: { metrics: ApiMetrics; access: MetricsAccess }) => {
  app.addHook('onResponse', async (request, reply) => {
    const route = request.routeOptions.url ?? 'unmatched';
    opts.metrics.httpDuration.observe(
      { method: request.method, route, status_code: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });

  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const verdict = scrapeVerdict(opts.access, request.headers.authorization);
    if (verdict === 'no_token') throw unauthorized('The metrics token is required.');
    if (verdict === 'closed') throw forbidden('Metrics are off: set METRICS_TOKEN (or METRICS_OPEN=true on a private network).');
    const body = await opts.metrics.registry.metrics();
    return reply.header('content-type', opts.metrics.registry.contentType).send(body);
  });
});
