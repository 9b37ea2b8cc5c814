import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import {
  ClaimDeleteReceipt, ClaimDeleteRequest, ClaimHistoryResponse, ClaimParams, ClaimResponse, ClaimsListRequest, ClaimsQueryRequest,
  ClaimUpdateRequest, ClaimUpdateResult, PageClaim, WorkspaceParams,
} from '../../../core/contracts/memory.ts';
import { claimHistory, getClaim, listClaims, queryClaims, updateClaim, withdrawClaim } from '../../../core/memory/claims.ts';
import { principalOf } from '../../plugins/auth.ts';
import { checkWorkspace, memoryErrors as errors, type MemoryRouteOptions } from './common.ts';

/** Claims (spec 3.5): list, ranked query, read, guarded correction and withdrawal, history. */
export const memoryClaimRoutes: FastifyPluginAsyncZod<MemoryRouteOptions> = async (app, { base, auth, tags, freeWork }) => {
  app.addHook('preHandler', checkWorkspace);

  app.post(`${base}/:ws/claims/list`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'List claims (current by default), newest first', params: WorkspaceParams, body: ClaimsListRequest.nullish(),
      response: { 200: PageClaim, ...errors },
    },
  }, async (request) => listClaims(request.em, principalOf(request), request.body ?? ClaimsListRequest.parse({})));

  app.post(`${base}/:ws/claims/query`, {
    config: { auth: auth.read },
    schema: {
      tags, summary: 'Ranked search over one peer\'s current claims', params: WorkspaceParams, body: ClaimsQueryRequest,
      response: { 200: PageClaim, ...errors },
    },
  }, async (request) => freeWork.run(principalOf(request).accountId, () => queryClaims(request.em, principalOf(request), request.body)));

  app.get(`${base}/:ws/claims/:id`, {
    config: { auth: auth.read },
    schema: { tags, summary: 'Read a claim', params: ClaimParams, response: { 200: ClaimResponse, ...errors } },
  }, async (request) => ({
    schemaVersion: 'service-memory-claim-v1' as const,
    ...(await getClaim(request.em, principalOf(request), request.params.id)),
  }));

  app.put(`${base}/:ws/claims/:id`, {
    config: { auth: auth.write },
    schema: {
      tags,
      summary: 'Correct a claim (guarded by head_revision); also how a pending_review proposal is accepted',
      params: ClaimParams,
      body: ClaimUpdateRequest,
      response: { 200: ClaimUpdateResult, ...errors },
    },
  }, async (request) => updateClaim(request.em, principalOf(request), request.params.id, request.body));

  app.delete(`${base}/:ws/claims/:id`, {
    config: { auth: auth.write },
    schema: {
      tags, summary: 'Withdraw a claim (guarded by head_revision); history is kept', params: ClaimParams, body: ClaimDeleteRequest,
      response: { 200: ClaimDeleteReceipt, ...errors },
    },
  }, async (request) => withdrawClaim(request.em, principalOf(request), request.params.id, request.body));

  app.get(`${base}/:ws/claims/:id/history`, {
    config: { auth: auth.read },
    schema: { tags, summary: 'Every version of a claim: ADD, UPDATE and DELETE entries', params: ClaimParams, response: { 200: ClaimHistoryResponse, ...errors } },
  }, async (request) => claimHistory(request.em, principalOf(request), request.params.id));
};
