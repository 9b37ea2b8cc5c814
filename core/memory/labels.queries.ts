import type { EntityManager as Em } from '@mikro-orm/postgresql';
import type { Reach } from '../auth/principal.ts';
import { WORKSPACE } from '../contracts/memory.ts';
import { bound, inAudiences, sql, type Sql } from '../../platform/db/sql.ts';

// The peer and session statements (memory_peer, memory_session); the rules are in labels.ts and, for
// the batch commit's lock, commit.ts.

export type LabelKind = 'peer' | 'session';
export type LabelRow = { id: string; label: string; created_at: Date; audience: string | null };

const TABLE: Record<LabelKind, Sql> = { peer: sql.raw('memory_peer'), session: sql.raw('memory_session') };

/** Inserts the label, or returns the existing row of it (whatever its audience); one row however many race. */
export async function getOrCreateLabel(em: Em, kind: LabelKind, l: { id: string; accountId: string; label: string; audience: string | null }): Promise<LabelRow> {
  const [row] = await bound<LabelRow>(em, sql`insert into ${TABLE[kind]} (id, account_id, workspace, label, audience)
    values (${l.id}, ${l.accountId}, ${WORKSPACE}, ${l.label}, ${l.audience})
    on conflict (account_id, workspace, label) do update set label = excluded.label
    returning id, label, created_at, audience`);
  return row!;
}

/** The label's row inside the key's reach; `lock`: for share (a deletion waits). */
export async function labelInReach(em: Em, reach: Reach, kind: LabelKind, which: { label: string; lock: boolean }): Promise<LabelRow | undefined> {
  const { label, lock } = which;
  const [row] = await bound<LabelRow>(em, sql`select id, label, created_at, audience from ${TABLE[kind]}
    where account_id = ${reach.accountId} and workspace = ${WORKSPACE} and label = ${label}${inAudiences('audience', reach.audiences)}${
      sql.raw(lock ? ' for share' : '')}`);
  return row;
}

/** Labels inside the key's reach in label order, after `after`. */
export async function labelsAfter(em: Em, reach: Reach, kind: LabelKind, page: { after: string | undefined; limit: number }): Promise<LabelRow[]> {
  const { after, limit } = page;
  return bound<LabelRow>(em, sql`select id, label, created_at, audience from ${TABLE[kind]}
    where account_id = ${reach.accountId} and workspace = ${WORKSPACE}${inAudiences('audience', reach.audiences)}
      ${after !== undefined ? sql`and label > ${after}` : sql.empty}
    order by label limit ${limit}`);
}

/** Up to `limit` labels inside the key's reach starting with `prefix`, in label order (argument completion). */
export async function labelsWithPrefix(em: Em, reach: Reach, { kind, prefix, limit }: { kind: LabelKind; prefix: string; limit: number }): Promise<string[]> {
  const rows = await bound<{ label: string }>(em, sql`select label from ${TABLE[kind]}
    where account_id = ${reach.accountId} and workspace = ${WORKSPACE}${inAudiences('audience', reach.audiences)}
      and label >= ${prefix} and left(label, ${prefix.length}) = ${prefix}
    order by label limit ${limit}`);
  return rows.map((r) => r.label);
}

/**
 * Locks those of the peers and sessions that still exist (for share, in id order: a deletion running
 * now waits for the caller's transaction or has won) and returns their ids.
 */
export async function lockLiveLabels(tx: Em, peerIds: string[], sessionIds: string[]): Promise<{ peers: string[]; sessions: string[] }> {
  const [alive] = await bound<{ peers: string[]; sessions: string[] }>(
    tx,
    sql`select (select coalesce(array_agg(id), '{}') from (select id from memory_peer where id = any(${peerIds}::uuid[]) order by id for share) p) as peers,
              (select coalesce(array_agg(id), '{}') from (select id from memory_session where id = any(${sessionIds}::uuid[]) order by id for share) s) as sessions`,
  );
  return alive!;
}
