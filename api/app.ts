import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { errorsPlugin } from './plugins/errors.ts';
import { openapiPlugin } from './plugins/openapi.ts';
import { healthRoutes, type ReadinessCheck } from './routes/health/index.ts';

export type AppDeps = {
  config: Pick<Config, 'publicBaseUrl'>;
  logger: Logger;
  /** Named dependency probes for /readyz (postgres, temporal). */
  readiness: Record<string, ReadinessCheck>;
  /** `api` serves the REST API and its docs; `mcp` is the MCP listener (health routes only so far). */
  surface?: 'api' | 'mcp';
};

const REQUEST_ID = /^[A-Za-z0-9._:-]{8,128}$/;

/** Builds the HTTP API. All dependencies come in; nothing is created here. */
export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    // Honour a caller's well-formed request id so logs correlate across hops; otherwise make one.
    genReqId: (req) => {
      const given = req.headers['x-request-id'];
      return typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
    },
    bodyLimit: 1_048_576,
    trustProxy: false,
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onSend', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(errorsPlugin);
  if ((deps.surface ?? 'api') === 'api') {
    await app.register(openapiPlugin, { publicBaseUrl: deps.config.publicBaseUrl });
  }
  await app.register(healthRoutes, { checks: deps.readiness });

  return app;
}
