import type { FastifyRequest } from 'fastify';
import type { Config } from '../../../shared/config.ts';
import { ErrorEnvelope } from '../../../shared/contracts/common.ts';
import { assertWorkspace } from '../../../shared/memory/labels.ts';
import type { SearchIndex } from '../../../shared/retrieval/search-index.ts';
import type { TemporalClientHandle } from '../../../shared/temporal/client.ts';
import type { AuthRule } from '../../plugins/auth.ts';

/** Native memory takes API keys only (spec 4.5, 5 rule 4): cookies and CLI tokens get 401. */
export const MEMORY_READ: AuthRule = { accept: ['apiKey'], scopes: ['memory.read'] };
export const MEMORY_WRITE: AuthRule = { accept: ['apiKey'], scopes: ['memory.write'] };

export const memoryErrors = {
  400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope, 429: ErrorEnvelope, 503: ErrorEnvelope,
};
export const tags = ['memory'];

/** `searchIndex`: this process's in-memory search indexes (asking memory ranks with them). */
export type MemoryRouteOptions = { config: Config; temporal: TemporalClientHandle; searchIndex?: SearchIndex };

/** Every memory route with a {ws} parameter checks it (only `default` exists) before its handler. */
export async function checkWorkspace(request: FastifyRequest): Promise<void> {
  const ws = (request.params as { ws?: string } | undefined)?.ws;
  if (ws !== undefined) assertWorkspace(ws);
}
