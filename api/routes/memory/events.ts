import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { EventParams, EventStatus, QueueStatus, WorkspaceParams } from '../../../shared/contracts/memory.ts';
import { eventStatus, getEvent, queueStatus } from '../../../shared/memory/events.ts';
import { principalOf } from '../../plugins/auth.ts';
import { checkWorkspace, MEMORY_READ, memoryErrors as errors, tags, type MemoryRouteOptions } from './common.ts';

/** Memory events (spec 3.4, 6): poll one event; queue counts by status. */
export const memoryEventRoutes: FastifyPluginAsyncZod<MemoryRouteOptions> = async (app) => {
  app.addHook('preHandler', checkWorkspace);

  app.get('/v1/workspaces/:ws/events/:id', {
    config: { auth: MEMORY_READ },
    schema: { tags, summary: 'Poll a memory event', params: EventParams, response: { 200: EventStatus, ...errors } },
  }, async (request) => eventStatus(await getEvent(request.em, principalOf(request), request.params.id)));

  app.get('/v1/workspaces/:ws/queue/status', {
    config: { auth: MEMORY_READ },
    schema: { tags, summary: 'Memory event counts by status', params: WorkspaceParams, response: { 200: QueueStatus, ...errors } },
  }, async (request) => queueStatus(request.em, principalOf(request)));
};
