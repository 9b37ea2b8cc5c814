import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  EventStatus, LabelUpsertRequest, PagePeer, PageRequest, PageSession, PageWorkspace, Peer, PeerParams, Session, SessionParams,
  Workspace, WorkspaceParams,
} from '../../../core/contracts/memory.ts';
import { eventStatus, requestDeletion } from '../../../core/memory/events.ts';
import { labelRecord, listLabels, requireLabel, upsertLabel, workspaceRecord } from '../../../core/memory/labels.ts';
import { principalOf } from '../../plugins/auth.ts';
import { checkWorkspace, memoryErrors as errors, type MemoryRouteOptions } from './common.ts';

/** Workspaces, peers and sessions (spec 4.5): get-or-create by label, pages, reads and deletions. */
export const memoryLabelRoutes: FastifyPluginAsyncZod<MemoryRouteOptions> = async (app, { base, auth, tags }) => {
  app.addHook('preHandler', checkWorkspace);

  app.post(base, {
    config: { auth: auth.write },
    schema: { tags, summary: 'Get or create the workspace (only `default` exists)', response: { 200: Workspace, ...errors } },
  }, async () => workspaceRecord());

  app.post(`${base}/list`, {
    config: { auth: auth.read },
    schema: { tags, summary: 'List workspaces', body: PageRequest.nullish(), response: { 200: PageWorkspace, ...errors } },
  }, async () => ({
    schemaVersion: 'service-memory-page-v1' as const,
    items: [{ id: 'default' as const }],
    pagination: { limit: 20, returned: 1, has_more: false, next_cursor: null },
  }));

  for (const kind of ['peer', 'session'] as const) {
    const plural = `${kind}s`;
    const Record = kind === 'peer' ? Peer : Session;
    const Params = kind === 'peer' ? PeerParams : SessionParams;
    const labelOf = (params: { peer?: string; s?: string }) => (kind === 'peer' ? params.peer! : params.s!);
    const one = kind === 'peer' ? ':peer' : ':s';

    app.post(`${base}/:ws/${plural}`, {
      config: { auth: auth.write },
      schema: { tags, summary: `Get or create a ${kind} by label`, params: WorkspaceParams, body: LabelUpsertRequest, response: { 200: Record, ...errors } },
    }, async (request) => labelRecord(kind, await upsertLabel(request.em, principalOf(request), kind, request.body.id)));

    app.post(`${base}/:ws/${plural}/list`, {
      config: { auth: auth.read },
      schema: {
        tags, summary: `List ${plural} in label order (cursor pages)`, params: WorkspaceParams, body: PageRequest.nullish(),
        response: { 200: kind === 'peer' ? PagePeer : PageSession, ...errors },
      },
    }, async (request) => listLabels(request.em, principalOf(request), kind, request.body ?? { limit: 20 }));

    app.get(`${base}/:ws/${plural}/${one}`, {
      config: { auth: auth.read },
      schema: { tags, summary: `Read a ${kind}`, params: Params, response: { 200: Record, ...errors } },
    }, async (request) => labelRecord(kind, await requireLabel(request.em, principalOf(request), kind, labelOf(request.params))));

    app.delete(`${base}/:ws/${plural}/${one}`, {
      config: { auth: auth.write },
      schema: {
        tags,
        summary: `Delete a ${kind} and everything derived from it (asynchronous: poll the returned event)`,
        params: Params,
        response: { 202: EventStatus, ...errors },
      },
    }, async (request, reply) => {
      const ev = await requestDeletion(request.em, principalOf(request), kind, labelOf(request.params));
      return reply.code(202).send(eventStatus(ev));
    });
  }
};
