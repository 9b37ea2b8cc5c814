import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  AskRequest, ContextQuery, MemoryContext, MessageParams, MessageRedactionReceipt, MessageRedactRequest, MessagesCreateReceipt,
  MessagesCreateRequest, PageMessage, PageRequest, PeerParams, RepresentationResponse, SessionContextQuery, SessionParams,
} from '../../../core/contracts/memory.ts';
import { askPeer, peerContext, peerRepresentation, sessionContext, type Reader } from '../../../core/memory/context.ts';
import { addMessages, listMessages } from '../../../core/memory/messages.ts';
import { redactMessage } from '../../../core/memory/redaction.ts';
import { principalOf } from '../../plugins/auth.ts';
import { checkWorkspace, memoryErrors as errors, type MemoryRouteOptions } from './common.ts';

/** Messages of sessions (write, list, redact), and reading memory back: ask, peer and session context, representation. */
export const memoryConversationRoutes: FastifyPluginAsyncZod<MemoryRouteOptions> = async (app, { base, auth, tags, searchIndex, freeWork }) => {
  // Reading memory back is free and CPU-bound (sentences of stored messages): a few at a time per account.
  const free = freeWork.run;
  const reader = (request: FastifyRequest, includeHeld: boolean): Reader => ({ index: searchIndex, reach: principalOf(request), includeHeld });
  app.addHook('preHandler', checkWorkspace);

  app.post(`${base}/:ws/sessions/:s/messages`, {
    config: { auth: auth.write },
    schema: {
      tags,
      summary: 'Add peer-attributed messages; returns an event to poll (a claim is derived when infer is true)',
      params: SessionParams,
      body: MessagesCreateRequest,
      response: { 200: MessagesCreateReceipt, ...errors },
    },
  }, async (request) => addMessages(request.em, principalOf(request), request.params.s, request.body));

  app.post(`${base}/:ws/sessions/:s/messages/list`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'List the session\'s messages in conversation order (those whose event succeeded)', params: SessionParams,
      body: PageRequest.nullish(), response: { 200: PageMessage, ...errors },
    },
  }, async (request) => listMessages(request.em, principalOf(request), request.params.s, request.body ?? { limit: 20 }));

  app.delete(`${base}/:ws/sessions/:s/messages/:message_id`, {
    config: { auth: auth.write },
    schema: {
      tags,
      summary: 'Redact one message: its content is removed, the claims citing it are withdrawn (history kept), the redaction is recorded',
      params: MessageParams, body: MessageRedactRequest, response: { 200: MessageRedactionReceipt, ...errors },
    },
  }, async (request) => redactMessage(request.em, principalOf(request), request.params, request.body));

  app.get(`${base}/:ws/sessions/:s/context`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'Session context for a peer: recent conversation and the peer\'s current claims', params: SessionParams,
      querystring: SessionContextQuery, response: { 200: MemoryContext, ...errors },
    },
  }, async (request) => free(principalOf(request).accountId, () => sessionContext(request.em, reader(request, request.query.include_held === 'true'), request.params.s, request.query)));

  app.post(`${base}/:ws/peers/:peer/ask`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'Ask about a peer: span-cited evidence, or status insufficient_evidence', params: PeerParams, body: AskRequest,
      response: { 200: MemoryContext, ...errors },
    },
  }, async (request) => free(principalOf(request).accountId, () => askPeer(request.em, reader(request, request.body.include_held), request.params.peer, request.body)));

  app.get(`${base}/:ws/peers/:peer/context`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'Assembled context about a peer (fail-closed)', params: PeerParams, querystring: ContextQuery,
      response: { 200: MemoryContext, ...errors },
    },
  }, async (request) => free(principalOf(request).accountId, () => peerContext(request.em, reader(request, request.query.include_held === 'true'), request.params.peer, request.query)));

  app.post(`${base}/:ws/peers/:peer/representation`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'Every current claim of a peer (and proposals awaiting review)', params: PeerParams,
      response: { 200: RepresentationResponse, ...errors },
    },
  }, async (request) => free(principalOf(request).accountId, () => peerRepresentation(request.em, principalOf(request), request.params.peer)));
};
