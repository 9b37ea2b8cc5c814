import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EventParams, EventStatus, QueueStatus, WorkspaceParams } from '../../../core/contracts/memory.ts';
import { eventStatus, getEvent, queueStatus } from '../../../core/memory/events.ts';
import { principalOf } from '../../plugins/auth.ts';
import { checkWorkspace, memoryErrors as errors, type MemoryRouteOptions } from './common.ts';

/** Memory events (spec 3.4, 6): poll one event; queue counts by status. */
export const memoryEventRoutes: FastifyPluginAsyncZod<MemoryRouteOptions> = async (app, { base, auth, tags }) => {
  app.addHook('preHandler', checkWorkspace);

  app.get(`${base}/:ws/events/:id`, {
    config: { auth: auth.read },
    schema: { tags, summary: 'Poll a memory event', params: EventParams, response: { 200: EventStatus, ...errors } },
  }, async (request) => eventStatus(await getEvent(request.em, principalOf(request), request.params.id)));

  app.get(`${base}/:ws/queue/status`, {
    config: { auth: auth.read },
    schema: { tags, summary: 'Memory event counts by status', params: WorkspaceParams, response: { 200: QueueStatus, ...errors } },
  }, async (request) => queueStatus(request.em, principalOf(request)));
};
