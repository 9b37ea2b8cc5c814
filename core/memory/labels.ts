import { randomUUID } from 'node:crypto';
import { withinReach, type Reach } from '../auth/principal.ts';
import { normalLabel, WORKSPACE } from '../contracts/memory.ts';
import { AppError, forbidden, notFound } from '../../platform/errors.ts';
import { decodeCursor, iso, page } from './pagination.ts';
import type { EntityManager as Em } from '@mikro-orm/postgresql';
import { getOrCreateLabel, labelInReach, labelsAfter, labelsWithPrefix, type LabelKind, type LabelRow } from './labels.queries.ts';

// Workspaces, peers and sessions: labels scoped to the account (the same label in two accounts is two
// things). Peers and sessions are get-or-create; a label of another account is simply not found.
// A label carries the audience of the key that created it (its first; null for a key that reaches the
// whole account), and so does the memory written about a peer: an audience-limited key sees and
// changes only labels of its audiences (docs/api.md, Audiences).

export type { LabelKind, LabelRow };

/** Only the workspace label `default` exists (spec 2.4); anything else is a 404 naming the rule. */
export function assertWorkspace(ws: string): void {
  if (ws !== WORKSPACE) throw new AppError(404, 'not_found', `Unknown workspace "${ws.slice(0, 60)}": only the workspace "default" exists.`);
}

export const workspaceRecord = () => ({ schemaVersion: 'service-memory-workspace-v1' as const, id: WORKSPACE as typeof WORKSPACE });

export const labelItem = (r: LabelRow) => ({ id: r.label, workspace: WORKSPACE as typeof WORKSPACE, created_at: iso(r.created_at)! });

/** The Peer or Session record of a label row. */
export const labelRecord = (kind: LabelKind, r: LabelRow) =>
  kind === 'peer'
    ? { schemaVersion: 'service-memory-peer-v1' as const, ...labelItem(r) }
    : { schemaVersion: 'service-memory-session-v1' as const, ...labelItem(r) };

/**
 * Get-or-create by label; concurrent upserts of one label yield one row. A label that exists outside
 * an audience-limited key's audiences cannot be created again: 403, nothing changed.
 */
export async function upsertLabel(em: Em, reach: Reach, kind: LabelKind, given: string): Promise<LabelRow> {
  const label = normalLabel(given);
  const row = await getOrCreateLabel(em, kind, { id: randomUUID(), accountId: reach.accountId, label, audience: reach.audiences?.[0] ?? null });
  if (!withinReach(reach, row!.audience)) throw forbidden(`The ${kind} "${label.slice(0, 80)}" is outside this API key's audiences.`);
  return row!;
}

/**
 * The row of a label, or 404: another account's label, or one outside the key's audiences, is
 * indistinguishable from a missing one. `label` with `lock`: locked for share (a deletion waits).
 */
export async function requireLabel(em: Em, reach: Reach, kind: LabelKind, which: string | { label: string; lock: boolean }): Promise<LabelRow> {
  const { label, lock } = typeof which === 'string' ? { label: which, lock: false } : which;
  const row = await labelInReach(em, reach, kind, { label: normalLabel(label), lock });
  if (!row) throw notFound(`No ${kind} "${label.slice(0, 80)}" in this workspace; create it first.`);
  return row;
}

/** Labels in label order, keyset-paginated by label. */
export async function listLabels(em: Em, reach: Reach, kind: LabelKind, p: { limit: number; cursor?: string }) {
  const after = decodeCursor(p.cursor, 1)?.[0] as string | undefined;
  const rows = await labelsAfter(em, reach, kind, { after, limit: p.limit + 1 });
  return page(rows, p.limit, (r) => [r.label], labelItem);
}

/** Labels of a kind starting with what was typed so far, for MCP argument completion (at most 100). */
export async function completeLabels(em: Em, reach: Reach, kind: LabelKind, prefix: string): Promise<string[]> {
  return labelsWithPrefix(em, reach, { kind, prefix, limit: 100 });
}
