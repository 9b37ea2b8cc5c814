import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Logger } from '../../../platform/logger.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { QueryRequest, QueryResult } from '../../../core/contracts/query.ts';
import { runQuery, type QueryServices } from '../../../core/query/run.ts';
import { principalOf, type AuthRule } from '../../plugins/auth.ts';

const errors = {
  400: ErrorEnvelope, 401: ErrorEnvelope, 402: ErrorEnvelope, 403: ErrorEnvelope, 409: ErrorEnvelope,
  429: ErrorEnvelope, 503: ErrorEnvelope,
};

/** Spec 5: API keys with scope query, and CLI session tokens ("classic query"). */
const QUERY_AUTH: AuthRule = { accept: ['apiKey', 'cli'], scopes: ['query'] };
/** Spec 4.2: the browser session only, with CSRF (checked by the auth plugin on every browser write). */
const ACCOUNT_ANSWERS_AUTH: AuthRule = { accept: ['browser'] };

type QueryRouteOptions = { query: QueryServices };

export const queryRoutes: FastifyPluginAsyncZod<QueryRouteOptions> = async (app, { query }) => {
  // Fastify's request logger is a pino child logger (the app is built on the process's pino instance).
  const run = (request: FastifyRequest) =>
    runQuery({ ...query, em: request.em, logger: request.log as unknown as Logger, requestId: request.id }, principalOf(request), request.body as QueryRequest);
  const schema = (summary: string) => ({ tags: ['query'], summary, body: QueryRequest, response: { 200: QueryResult, ...errors } });

  app.post(
    '/v1/query',
    { config: { auth: QUERY_AUTH }, schema: schema('Evidence, prompt-ready context or a cited answer over sources and memory') },
    async (request, reply) => {
      const r = await run(request);
      return reply.headers(r.headers).send(r.result);
    },
  );

  app.post(
    '/v1/account/answers/query',
    { config: { auth: ACCOUNT_ANSWERS_AUTH }, schema: schema('The same query for the signed-in browser session (Console)') },
    async (request, reply) => {
      const r = await run(request);
      return reply.headers(r.headers).send(r.result);
    },
  );
};
