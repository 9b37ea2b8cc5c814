import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { bound, sql, type Sql } from '../../platform/db/sql.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { memoryRows } from '../helpers/memory-rows.ts';
import { startApi, testTemporalClient } from '../helpers/services.ts';

// Pagination loses nothing (issue 24): many items in the same millisecond (PostgreSQL keeps
// microseconds, JavaScript dates milliseconds), paged through at every page size, each found exactly
// once and in order. claims/list once skipped 3 of 950 claims at page boundaries.

let db: TestDatabase;
let api: Awaited<ReturnType<typeof startApi>>;
const temporal = testTemporalClient();

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal });
}, 120_000);

afterAll(async () => {
  await api?.close();
  await temporal.close();
  await db?.drop();
});

const run = (statement: Sql) => bound(db.orm.em.fork(), statement);

async function newAccount() {
  const defaults = loadConfig({}).accountDefaults;
  const account = await createAccount(db.orm.em.fork(), defaults, { email: `p-${randomUUID()}@cairn.local`, password: 'a long enough password' });
  const key = await createApiKey(db.orm.em.fork(), account.id, { name: 'k', scopes: ['memory.read', 'ingest'], maxPreset: 'accuracy' });
  return { id: account.id, auth: { authorization: `Bearer ${key.secret}`, 'content-type': 'application/json' } };
}

/** Every id of a list, page by page at `limit`, following nextCursor / next_cursor. */
async function pageThrough(limit: number, fetchPage: (limit: number, cursor: string | undefined) => Promise<{ ids: string[]; next: string | null }>) {
  const seen: string[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < 1000; pages++) {
    const { ids, next } = await fetchPage(limit, cursor);
    expect(ids.length).toBeLessThanOrEqual(limit);
    seen.push(...ids);
    if (!next) return seen;
    cursor = next;
  }
  throw new Error('no last page');
}

/** One page of a memory list route (POST with limit and cursor in the body). */
async function memoryPage(auth: Record<string, string>, path: string, body: Record<string, unknown>, limit: number, cursor: string | undefined) {
  const res = await fetch(`${api.baseUrl}/v1/workspaces/default/${path}`, {
    method: 'POST', headers: auth, body: JSON.stringify({ ...body, limit, ...(cursor ? { cursor } : {}) }),
  });
  expect(res.status, await res.clone().text()).toBe(200);
  const page = (await res.json()) as { items: { id: string }[]; pagination: { next_cursor: string | null } };
  return { ids: page.items.map((i) => i.id), next: page.pagination.next_cursor };
}

/** Timestamps within one millisecond: microsecond offsets (some equal, so the tie-breaker decides). */
const sameMillisecond = (offsets: number[]) => offsets.map((us) => `2026-11-24T10:00:00.123${String(us).padStart(3, '0')}Z`);

const offsets = fc.array(fc.integer({ min: 0, max: 999 }), { minLength: 2, maxLength: 24 });

describe('cursors are exact and stable', () => {
  it('claims/list: every claim once, newest first, at every page size', async () => {
    await fc.assert(fc.asyncProperty(offsets, async (us) => {
      const account = await newAccount();
      const rows = memoryRows(db.orm);
      const peer = await rows.peer(account.id, 'ana');
      const ids: { id: string; at: string }[] = [];
      for (const at of sameMillisecond(us)) {
        const id = await rows.claim(account.id, { peerId: peer, content: `claim ${ids.length}`, authority: 'inferred_memory' });
        await run(sql`update memory_claim set created_at = ${at}::timestamptz where id = ${id}`);
        ids.push({ id, at });
      }
      const expected = ids.sort((a, b) => (a.at === b.at ? (a.id < b.id ? 1 : -1) : a.at < b.at ? 1 : -1)).map((r) => r.id);
      for (let limit = 1; limit <= ids.length + 1; limit++) {
        const seen = await pageThrough(limit, (l, cursor) => memoryPage(account.auth, 'claims/list', { peer_id: 'ana' }, l, cursor));
        expect(seen, `page size ${limit}`).toEqual(expected);
      }
    }), { numRuns: 3, seed: 24 });
  }, 300_000);

  it('messages/list: every message once, in conversation order, at every page size', async () => {
    await fc.assert(fc.asyncProperty(offsets, async (us) => {
      const account = await newAccount();
      const rows = memoryRows(db.orm);
      const peer = await rows.peer(account.id, 'ana');
      const session = await rows.session(account.id, 'chat');
      const made: { id: string; eventId: string; at: string }[] = [];
      for (const at of sameMillisecond(us)) {
        const m = await rows.message(account.id, { peerId: peer, sessionId: session, content: `message ${made.length}` });
        await run(sql`update memory_message set created_at = ${at}::timestamptz where id = ${m.id}`);
        made.push({ ...m, at });
      }
      const expected = made.sort((a, b) => (a.at === b.at ? (a.eventId < b.eventId ? -1 : 1) : a.at < b.at ? -1 : 1)).map((r) => r.id);
      for (let limit = 1; limit <= made.length + 1; limit++) {
        const seen = await pageThrough(limit, (l, cursor) => memoryPage(account.auth, 'sessions/chat/messages/list', {}, l, cursor));
        expect(seen, `page size ${limit}`).toEqual(expected);
      }
    }), { numRuns: 3, seed: 24 });
  }, 300_000);

  it('ingest jobs and peers: every item once at every page size', async () => {
    await fc.assert(fc.asyncProperty(offsets, async (us) => {
      const account = await newAccount();
      const jobs: string[] = [];
      for (const at of sameMillisecond(us)) {
        const id = randomUUID();
        await run(sql`insert into ingest_job (id, account_id, kind, status, idempotency_key, request_hash, created_at)
          values (${id}, ${account.id}, 'url', 'failed', ${id}, 'h', date_trunc('milliseconds', ${at}::timestamptz))`);
        jobs.push(id);
      }
      const rows = memoryRows(db.orm);
      const peers = await Promise.all(us.map((_, i) => rows.peer(account.id, `peer-${String(i).padStart(2, '0')}`).then(() => `peer-${String(i).padStart(2, '0')}`)));
      for (let limit = 1; limit <= us.length + 1; limit++) {
        const seenJobs = await pageThrough(limit, async (l, cursor) => {
          const res = await fetch(`${api.baseUrl}/v1/ingest/jobs?limit=${l}${cursor ? `&cursor=${cursor}` : ''}`, { headers: account.auth });
          const body = (await res.json()) as { jobs: { id: string }[]; pagination: { nextCursor: string | null } };
          return { ids: body.jobs.map((j) => j.id), next: body.pagination.nextCursor };
        });
        expect(seenJobs, `jobs, page size ${limit}`).toEqual([...jobs].sort().reverse());
        const seenPeers = await pageThrough(limit, (l, cursor) => memoryPage(account.auth, 'peers/list', {}, l, cursor));
        expect(seenPeers, `peers, page size ${limit}`).toEqual([...peers].sort());
      }
    }), { numRuns: 3, seed: 24 });
  }, 300_000);
});
