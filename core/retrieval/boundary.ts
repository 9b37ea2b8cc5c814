import type { EntityManager } from '@mikro-orm/postgresql';
import type { Principal, Reach } from '../auth/principal.ts';
import { forbidden } from '../../platform/errors.ts';
import { labelsInReach, sourceAudiences } from './boundary.queries.ts';

/**
 * The authorized context of one query: the account, the key's audiences, and the selectors of the
 * request resolved to rows of that account. A selector naming anything outside the context is 403,
 * never an empty success.
 */
export type Boundary = {
  accountId: string;
  /** Audience labels content must carry (null = any, including unlabelled content). */
  audiences: string[] | null;
  includeSources: boolean;
  includeMemory: boolean;
  sourceIds: string[] | null;
  peerIds: string[] | null;
  sessionIds: string[] | null;
  agentId: string | null;
  /**
   * Messages held for review (memory/held.ts) are left out of evidence and context unless the caller
   * asks for them; then they come marked `held`.
   */
  includeHeld?: boolean;
};

export type Selectors = {
  workspace?: string;
  audience?: string;
  source_ids?: string[];
  peer_ids?: string[];
  session_ids?: string[];
  agent_id?: string;
  include_held?: boolean;
};

const unique = (xs: string[]) => [...new Set(xs)];

async function resolveLabels(em: EntityManager, table: 'memory_peer' | 'memory_session', reach: Reach, labels: string[]) {
  const rows = await labelsInReach(em, table, reach, labels);
  if (rows.length !== labels.length) {
    const what = table === 'memory_peer' ? 'peer_ids' : 'session_ids';
    throw forbidden(`${what} names a label outside this credential's context.`);
  }
  return rows.map((r) => r.id);
}

export async function resolveBoundary(em: EntityManager, principal: Principal, s: Selectors): Promise<Boundary> {
  if (s.workspace !== undefined && s.workspace !== 'default') {
    throw forbidden('workspace is outside this credential\'s context (only `default` exists).');
  }
  let audiences = principal.audiences ? [...principal.audiences] : null;
  if (s.audience !== undefined) {
    if (audiences && !audiences.includes(s.audience)) throw forbidden('audience is outside this API key\'s audiences.');
    audiences = [s.audience];
  }
  const memorySelected = Boolean(s.peer_ids || s.session_ids || s.agent_id);
  const boundary: Boundary = {
    accountId: principal.accountId,
    audiences,
    // Selectors narrow: memory selectors alone search memory only, source_ids alone sources only.
    includeSources: Boolean(s.source_ids) || !memorySelected,
    includeMemory: memorySelected || !s.source_ids,
    sourceIds: null,
    peerIds: null,
    sessionIds: null,
    agentId: s.agent_id ?? null,
    includeHeld: s.include_held === true,
  };
  const checks: Promise<void>[] = [];
  if (s.source_ids) {
    const ids = unique(s.source_ids.map((x) => x.toLowerCase()));
    checks.push(
      sourceAudiences(em, principal.accountId, ids).then((rows) => {
        const visible = rows.filter((r) => !principal.audiences || (r.audience !== null && principal.audiences.includes(r.audience)));
        if (visible.length !== ids.length) throw forbidden('source_ids names a source outside this credential\'s context.');
        boundary.sourceIds = ids;
      }),
    );
  }
  if (s.peer_ids) checks.push(resolveLabels(em, 'memory_peer', principal, unique(s.peer_ids)).then((ids) => void (boundary.peerIds = ids)));
  if (s.session_ids) {
    checks.push(resolveLabels(em, 'memory_session', principal, unique(s.session_ids)).then((ids) => void (boundary.sessionIds = ids)));
  }
  const results = await Promise.allSettled(checks);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return boundary;
}
