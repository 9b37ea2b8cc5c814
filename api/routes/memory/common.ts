import type { FastifyRequest } from 'fastify';
import type { Config } from '../../../platform/config.ts';
import type { FreeWorkLimiter } from '../../../platform/ops/free-work.ts';
import { ErrorEnvelope } from '../../../core/contracts/common.ts';
import { assertWorkspace } from '../../../core/memory/labels.ts';
import type { SearchIndex } from '../../../core/retrieval/search-index.ts';
import type { AuthRule } from '../../plugins/auth.ts';

type Mount = { base: string; auth: { read: AuthRule; write: AuthRule }; tags: string[] };

/** Native memory takes API keys only (spec 4.5, 5 rule 4): cookies and CLI tokens get 401. */
export const MEMORY_API: Mount = {
  base: '/v1/workspaces',
  auth: { read: { accept: ['apiKey'], scopes: ['memory.read'] }, write: { accept: ['apiKey'], scopes: ['memory.write'] } },
  tags: ['memory'],
};

/**
 * The same routes for the console, account-scoped under /v1/account/memory/workspaces: the browser
 * session only (CSRF on writes, as every browser write), with the account's authority; API keys and
 * CLI tokens get 401 there. Both mounts run the same handlers over the same domain functions.
 */
export const MEMORY_CONSOLE: Mount = {
  base: '/v1/account/memory/workspaces',
  auth: { read: { accept: ['browser'] }, write: { accept: ['browser'] } },
  tags: ['console memory'],
};

export const memoryErrors = {
  400: ErrorEnvelope, 401: ErrorEnvelope, 403: ErrorEnvelope, 404: ErrorEnvelope, 409: ErrorEnvelope, 429: ErrorEnvelope, 503: ErrorEnvelope,
};
/** `searchIndex`: this process's in-memory search indexes (asking memory ranks with them); `freeWork`: free reads in flight per account. */
export type MemoryRouteOptions = Mount & { config: Config; searchIndex?: SearchIndex; freeWork: FreeWorkLimiter };

/** Every memory route with a {ws} parameter checks it (only `default` exists) before its handler. */
export async function checkWorkspace(request: FastifyRequest): Promise<void> {
  const ws = (request.params as { ws?: string } | undefined)?.ws;
  if (ws !== undefined) assertWorkspace(ws);
}
