import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../../platform/db/orm.ts';
import type { Logger } from '../../platform/logger.ts';
import { AccountIndex, parseTid, type ClaimDoc, type MessageDoc, type RecordDoc } from './account-index.ts';
import { CLAIM, MESSAGE, RECORD } from './bm25.ts';
import type { Config } from '../../platform/config.ts';
import { createEmbedder, type Embedder } from './embeddings.ts';
import { createReranker, type Reranker } from './rerank.ts';
import {
  activeSources,
  claimPages,
  indexVersions,
  memoryIndexVersion,
  messagePages,
  recordPages,
  sourcesSize,
  terms,
  vectorOf,
} from './search-index.queries.ts';

/**
 * The API's in-memory copies of accounts' search indexes (account-index.ts), kept exact by versions:
 *
 * - Source records change only with their source row, which moves record_index_version (migration
 *   0017); a refresh compares the account's active sources with the copy's and loads the new ones.
 * - Searchable memory changes move memory_index_version (migration 0022), and each add-event that made
 *   messages available and each changed claim is stamped with the version that saw it; a refresh loads
 *   what was stamped since the copy's version, in one snapshot, and starts over after a deletion.
 * - A query uses a copy only when it is at or past the versions the query read in its first statement,
 *   waiting up to WAIT_MS for a refresh (a few new messages take milliseconds; a cold account of 100,000
 *   excerpts about a second); otherwise PostgreSQL finds the candidates (retrieve.ts) while the copy
 *   loads in the background.
 * - Memory is bounded (maxBytes over all accounts, least recently used evicted first); an account that
 *   does not fit is left to PostgreSQL.
 */

export type Versions = { records: number; memory: number };

export type SearchIndex = {
  /** Makes the query vectors compared with the documents' (null: lexical retrieval only). */
  embedder: Embedder | null;
  /** Reorders an accuracy query's best hits (null: the lexical order stands). */
  reranker: Reranker | null;
  /**
   * The account's copy at or past `versions`, after waiting up to `waitMs` for it to catch up; null
   * when there is none in time (a refresh goes on in the background).
   */
  current(accountId: string, versions: Versions, waitMs?: number): Promise<AccountIndex | null>;
  /** Brings the account's copy up to date; false when the account is too large to hold. */
  warm(accountId: string): Promise<boolean>;
  /** Accounts held and their estimated bytes. */
  usage(): { accounts: number; bytes: number };
  /** Queries answered from a copy (hits) and left to PostgreSQL (misses) since the process started. */
  lookups(): { hits: number; misses: number };
};

export const WAIT_MS = 250;
/** A too-large account is checked again after this long, or as soon as its versions change. */
const TOO_LARGE_RETRY_MS = 10 * 60_000;
/** Estimated bytes of a posting and of a document (account-index.ts keeps the exact accounting). */
const POSTING_BYTES = 6;
const DOC_BYTES = 120;

async function loadRecords(em: EntityManager, into: AccountIndex, sourceIds: string[], model: string | null): Promise<void> {
  const batch = into.batch();
  await em.transactional(async (tx) => {
    for await (const rows of recordPages(tx, sourceIds, model)) {
      batch.add(rows.map((r) => ({ kind: RECORD, doc: { id: r.id, sourceId: r.source_id, tid: parseTid(r.tid), ...terms(r), ...vectorOf(r) } satisfies RecordDoc })));
    }
  });
  batch.finish();
}

/**
 * Memory stamped after the copy's version, in one snapshot with the version read: messages first, so
 * the claims of the same commit find the message they group with.
 */
async function loadMemory(em: EntityManager, into: AccountIndex, accountId: string, fresh: boolean, model: string | null): Promise<'loaded' | 'reset'> {
  return em.transactional(async (tx) => {
    const v = await memoryIndexVersion(tx, accountId);
    const version = Number(v?.version ?? 0);
    if (!fresh && (Number(v?.reset_at ?? 0) > into.memoryVersion || version < into.memoryVersion)) return 'reset';
    const range: [string, number, number] = [accountId, into.memoryVersion, version];
    const batch = into.batch();
    const removed: string[] = [];
    for await (const rows of messagePages(tx, range, model)) {
      batch.add(rows.map((r) => ({
        kind: MESSAGE,
        doc: {
          id: r.id, sessionId: r.session_id, peerId: r.peer_id, audience: r.audience, agentId: r.agent_id, at: Number(r.at),
          eventId: r.event_id, position: r.position, ...terms(r), ...vectorOf(r),
        } satisfies MessageDoc,
      })));
    }
    for await (const rows of claimPages(tx, range)) {
      removed.push(...rows.filter((x) => !x.live).map((r) => r.id));
      batch.add(rows.filter((r) => r.live).map((r) => ({
        kind: CLAIM,
        doc: { id: r.id, sessionId: r.session_id, peerId: r.peer_id, audience: r.audience, agentId: r.agent_id, messageId: r.message_id, ...terms(r) } satisfies ClaimDoc,
      })));
    }
    batch.finish();
    for (const id of removed) into.remove(id);
    into.memoryVersion = version;
    return 'loaded';
  }, { isolationLevel: 'repeatable read', readOnly: true });
}

type SearchIndexOptions = { orm: Orm; maxBytes: number; logger?: Logger; embedder?: Embedder | null; reranker?: Reranker | null };

/** A process's copies (least recently used first), the refreshes under way and the accounts too large to hold. */
type Copies = {
  opts: SearchIndexOptions;
  model: string | null;
  accounts: Map<string, AccountIndex>;
  refreshing: Map<string, Promise<boolean>>;
  tooLarge: Map<string, { versions: string; at: number }>;
  lookups: { hits: number; misses: number };
};

const totalBytes = (c: Copies) => [...c.accounts.values()].reduce((a, t) => a + t.bytes(), 0);
const isCurrent = (held: AccountIndex | undefined, v: Versions) => held !== undefined && held.recordVersion >= v.records && held.memoryVersion >= v.memory;

export function createSearchIndex(opts: SearchIndexOptions): SearchIndex {
  const copies: Copies = { opts, model: opts.embedder?.model ?? null, accounts: new Map(), refreshing: new Map(), tooLarge: new Map(), lookups: { hits: 0, misses: 0 } };
  return {
    embedder: opts.embedder ?? null,
    reranker: opts.reranker ?? null,
    current: (accountId, versions, waitMs = WAIT_MS) => current(copies, accountId, versions, waitMs),
    warm: (accountId) => warm(copies, accountId),
    usage: () => ({ accounts: copies.accounts.size, bytes: totalBytes(copies) }),
    lookups: () => ({ ...copies.lookups }),
  };
}

async function current(c: Copies, accountId: string, versions: Versions, waitMs: number): Promise<AccountIndex | null> {
  const found = await currentCopy(c, accountId, versions, waitMs);
  c.lookups[found ? 'hits' : 'misses']++;
  return found;
}

async function currentCopy(c: Copies, accountId: string, versions: Versions, waitMs: number): Promise<AccountIndex | null> {
  if (c.opts.maxBytes <= 0) return null;
  const deadline = performance.now() + waitMs;
  const timeout = new AbortController();
  const expired = sleep(waitMs, null, { signal: timeout.signal }).catch(() => null);
  try {
    for (;;) {
      const held = c.accounts.get(accountId);
      if (isCurrent(held, versions)) {
        // Most recently used: a Map iterates in insertion order.
        c.accounts.delete(accountId);
        c.accounts.set(accountId, held!);
        return held!;
      }
      const refreshed = warm(c, accountId).catch((err: unknown) => {
        c.opts.logger?.warn({ err }, 'search index: refresh failed');
        return false;
      });
      if (performance.now() >= deadline || (await Promise.race([refreshed, expired])) !== true) return null;
    }
  } finally {
    timeout.abort();
  }
}

/** One refresh per account at a time: callers that come while it runs share it. */
function warm(c: Copies, accountId: string): Promise<boolean> {
  let p = c.refreshing.get(accountId);
  if (!p) {
    p = refresh(c, accountId).finally(() => c.refreshing.delete(accountId));
    c.refreshing.set(accountId, p);
  }
  return p;
}

async function refresh(c: Copies, accountId: string): Promise<boolean> {
  const { opts, accounts } = c;
  const em = opts.orm.em.fork();
  // Versions first: whatever commits later moves them past what this load is stamped with.
  const v = await indexVersions(em, accountId, { postingBytes: POSTING_BYTES, docBytes: DOC_BYTES });
  const versions: Versions = { records: Number(v.records), memory: Number(v.memory) };
  const key = `${versions.records}:${versions.memory}`;
  const held = accounts.get(accountId);
  if (isCurrent(held, versions)) return true;
  const large = c.tooLarge.get(accountId);
  if (large && large.versions === key && Date.now() - large.at < TOO_LARGE_RETRY_MS) return false;
  const refuse = (estimate: number) => {
    accounts.delete(accountId);
    c.tooLarge.set(accountId, { versions: key, at: Date.now() });
    opts.logger?.info({ accountId, estimatedBytes: estimate }, 'search index: account too large to hold in memory; PostgreSQL ranks its queries');
    return false;
  };

  // Start over when most documents held are gone (their postings are dead weight).
  const index = held && held.dead * 2 <= held.size ? held : new AccountIndex();
  const fresh = index.size === 0;
  if (fresh && Number(v.estimate) > opts.maxBytes) return refuse(Number(v.estimate));
  if (index.recordVersion < versions.records || fresh) {
    const over = await syncSources(c, em, index, accountId);
    if (over !== null) return refuse(over);
    index.recordVersion = versions.records;
  }
  if (index.memoryVersion < versions.memory || fresh) {
    if ((await loadMemory(em, index, accountId, fresh, c.model)) === 'reset') {
      // Something was deleted since: load everything again, into a new copy.
      accounts.delete(accountId);
      return refresh(c, accountId);
    }
  }
  index.prepare();
  // Grown past the budget on its own (memory written since it was loaded).
  if (index.bytes() > opts.maxBytes) return refuse(index.bytes());
  c.tooLarge.delete(accountId);
  hold(c, accountId, index);
  return true;
}

/**
 * Brings the copy's sources to the account's active ones, loading the records of those it lacks;
 * the estimated bytes when they would take the copy over the budget (nothing loaded), else null.
 */
async function syncSources(c: Copies, em: EntityManager, index: AccountIndex, accountId: string): Promise<number | null> {
  const active = await activeSources(em, accountId);
  const activeIds = new Set(active.map((s) => s.id));
  for (const id of index.sourceIds()) if (!activeIds.has(id)) index.removeSource(id);
  const added = active.filter((s) => !index.hasSource(s.id));
  for (const s of active) index.setSource(s.id, s.audience);
  if (added.length) {
    const size = await sourcesSize(em, added.map((s) => s.id));
    const estimate = Number(size.postings) * POSTING_BYTES + Number(size.records) * DOC_BYTES;
    if (index.bytes() + estimate > c.opts.maxBytes) return estimate;
    try {
      await loadRecords(em, index, added.map((s) => s.id), c.model);
    } catch (err) {
      // A copy with sources registered but not loaded would miss their records at a later version.
      c.accounts.delete(accountId);
      throw err;
    }
  }
  return null;
}

/** Holds the copy as the most recently used; least recently used accounts go first when the total is over the budget. */
function hold(c: Copies, accountId: string, index: AccountIndex) {
  c.accounts.delete(accountId);
  c.accounts.set(accountId, index);
  let total = totalBytes(c);
  for (const [id, copy] of c.accounts) {
    if (total <= c.opts.maxBytes || id === accountId) break;
    total -= copy.bytes();
    c.accounts.delete(id);
  }
}

/** The search index an API process runs with: its memory budget and embeddings provider from the configuration. */
export function searchIndexFor(config: Pick<Config, 'query' | 'embeddings' | 'rerank'>, orm: Orm, logger?: Logger): SearchIndex {
  return createSearchIndex({
    orm, maxBytes: config.query.indexMaxBytes, ...(logger ? { logger } : {}),
    embedder: config.embeddings ? createEmbedder(config.embeddings) : null,
    reranker: config.rerank ? createReranker(config.rerank) : null,
  });
}
