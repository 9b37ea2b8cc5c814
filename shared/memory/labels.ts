import { randomUUID } from 'node:crypto';
import { WORKSPACE } from '../contracts/memory.ts';
import { AppError, notFound } from '../errors.ts';
import { decodeCursor, iso, page, sql, type Em } from './db.ts';

// Workspaces, peers and sessions: labels scoped to the account (the same label in two accounts is two
// things). Peers and sessions are get-or-create; a label of another account is simply not found.

export type LabelKind = 'peer' | 'session';
export type LabelRow = { id: string; label: string; created_at: Date };

const TABLE: Record<LabelKind, string> = { peer: 'memory_peer', session: 'memory_session' };

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

/** Get-or-create by label; concurrent upserts of one label yield one row. */
export async function upsertLabel(em: Em, accountId: string, kind: LabelKind, label: string): Promise<LabelRow> {
  const [row] = await sql<LabelRow>(
    em,
    `insert into ${TABLE[kind]} (id, account_id, workspace, label) values (?, ?, ?, ?)
       on conflict (account_id, workspace, label) do update set label = excluded.label
     returning id, label, created_at`,
    [randomUUID(), accountId, WORKSPACE, label],
  );
  return row!;
}

export async function findLabel(em: Em, accountId: string, kind: LabelKind, label: string, lock = false): Promise<LabelRow | undefined> {
  const [row] = await sql<LabelRow>(
    em,
    `select id, label, created_at from ${TABLE[kind]} where account_id = ? and workspace = ? and label = ?${lock ? ' for share' : ''}`,
    [accountId, WORKSPACE, label],
  );
  return row;
}

/** The row of a label, or 404 (another account's label is indistinguishable from a missing one). */
export async function requireLabel(em: Em, accountId: string, kind: LabelKind, label: string, lock = false): Promise<LabelRow> {
  const row = await findLabel(em, accountId, kind, label, lock);
  if (!row) throw notFound(`No ${kind} "${label.slice(0, 80)}" in this workspace; create it first.`);
  return row;
}

/** Labels in label order, keyset-paginated by label. */
export async function listLabels(em: Em, accountId: string, kind: LabelKind, p: { limit: number; cursor?: string }) {
  const after = decodeCursor(p.cursor, 1)?.[0] as string | undefined;
  const rows = await sql<LabelRow>(
    em,
    `select id, label, created_at from ${TABLE[kind]}
      where account_id = ? and workspace = ? ${after !== undefined ? 'and label > ?' : ''}
      order by label limit ?`,
    after !== undefined ? [accountId, WORKSPACE, after, p.limit + 1] : [accountId, WORKSPACE, p.limit + 1],
  );
  return page(rows, p.limit, (r) => [r.label], labelItem);
}
