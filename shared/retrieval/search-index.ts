import { setTimeout as sleep } from 'node:timers/promises';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.ts';
import { bound, sql, type Sql } from '../db/sql.ts';
import type { Logger } from '../logger.ts';
import { AccountIndex, parseTid, type ClaimDoc, type MessageDoc, type RecordDoc } from './account-index.ts';
import { CLAIM, MESSAGE, RECORD } from './bm25.ts';
import type { Config } from '../config.ts';
import { createEmbedder, fromBytes, type Embedder } from './embeddings.ts';
import { RECORD_LENGTH } from './terms.ts';

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

/** The account's record and memory versions, as text; one `?` each: the account id. */
export const recordVersion = (accountId: string): Sql => sql`coalesce((select version from record_index_version where account_id = ${accountId}), 0)::text`;
export const memoryVersion = (accountId: string): Sql => sql`coalesce((select version from memory_index_version where account_id = ${accountId}), 0)::text`;

export type Versions = { records: number; memory: number };

export type SearchIndex = {
  /** Makes the query vectors compared with the documents' (null: lexical retrieval only). */
  embedder: Embedder | null;
  /**
   * The account's copy at or past `versions`, after waiting up to `waitMs` for it to catch up; null
   * when there is none in time (a refresh goes on in the background).
   */
  current(accountId: string, versions: Versions, waitMs?: number): Promise<AccountIndex | null>;
  /** Brings the account's copy up to date; false when the account is too large to hold. */
  warm(accountId: string): Promise<boolean>;
  /** Accounts held and their estimated bytes. */
  usage(): { accounts: number; bytes: number };
};

export const WAIT_MS = 250;
/** Rows per fetch while loading: parsing one page is a stretch of the API's event loop. */
const LOAD_PAGE = 500;
/** A too-large account is checked again after this long, or as soon as its versions change. */
const TOO_LARGE_RETRY_MS = 10 * 60_000;
/** Estimated bytes of a posting and of a document (account-index.ts keeps the exact accounting). */
const POSTING_BYTES = 6;
const DOC_BYTES = 120;

/** Separates lexemes in one string per document (PostgreSQL's parser never puts a control character in a lexeme). */
const SEP = '\u001f';
/** A document's lexemes and frequencies as two strings: splitting is native, parsing arrays in JavaScript was most of a load. */
const TERMS = (tsv: string) => `cross join lateral (select string_agg(u.lexeme, chr(31)) as lexemes,
      string_agg(coalesce(array_length(u.positions, 1), 1)::text, ',') as tfs from unnest(${tsv}) u) t`;

type Terms = { lexemes: string | null; tfs: string | null; len: number };
const terms = (r: Terms) => ({ lexemes: r.lexemes ? r.lexemes.split(SEP) : [], tfs: r.tfs ? r.tfs.split(',').map(Number) : [], length: Number(r.len) });

/** Rows of a cursor, a page at a time, inside the caller's transaction. */
async function* cursor<T>(tx: EntityManager, name: string, select: string, params: unknown[]): AsyncGenerator<T[]> {
  await bound(tx, `declare ${name} no scroll cursor for ${select}`, params);
  for (;;) {
    const rows = await bound<T>(tx, `fetch forward ${LOAD_PAGE} from ${name}`, []);
    if (rows.length) yield rows;
    if (rows.length < LOAD_PAGE) break;
  }
  await bound(tx, `close ${name}`, []);
}

/** A row's vector when it was made by the model queries are embedded with. */
const VECTOR = (alias: string) => `case when ${alias}.embedding_model = ? then ${alias}.embedding end as vector`;
const vectorOf = (r: { vector: Buffer | null }) => (r.vector ? { vector: fromBytes(r.vector) } : {});

async function loadRecords(em: EntityManager, into: AccountIndex, sourceIds: string[], model: string | null): Promise<void> {
  const batch = into.batch();
  await em.transactional(async (tx) => {
    type Row = Terms & { id: string; source_id: string; tid: string; vector: Buffer | null };
    for await (const rows of cursor<Row>(tx, 'cairn_index_records', `select r.id, r.source_id, r.ctid::text as tid, l.len, t.lexemes, t.tfs, ${VECTOR('r')}
        from record r ${RECORD_LENGTH} ${TERMS('r.tsv')} where r.source_id = any(?::uuid[])`, [model, sourceIds])) {
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
    const [v] = await bound<{ version: string; reset_at: string }>(tx,
      'select version, reset_at from memory_index_version where account_id = ?', [accountId]);
    const version = Number(v?.version ?? 0);
    if (!fresh && (Number(v?.reset_at ?? 0) > into.memoryVersion || version < into.memoryVersion)) return 'reset';
    const range = [accountId, into.memoryVersion, version];
    const batch = into.batch();
    const removed: string[] = [];
    type Message = Terms & {
      id: string; session_id: string; peer_id: string; audience: string | null; agent_id: string | null; at: number; event_id: string; position: number;
      vector: Buffer | null;
    };
    for await (const rows of cursor<Message>(tx, 'cairn_index_messages', `select m.id, m.session_id, m.peer_id, m.audience, m.agent_id,
        extract(epoch from m.created_at)::float8 * 1000 as at, m.event_id, m.position, cairn_tsv_length(m.tsv) as len, t.lexemes, t.tfs, ${VECTOR('m')}
        from memory_event e join memory_message m on m.event_id = e.id ${TERMS('m.tsv')}
       where e.account_id = ? and e.indexed_at > ? and e.indexed_at <= ? and m.available`, [model, ...range])) {
      batch.add(rows.map((r) => ({
        kind: MESSAGE,
        doc: {
          id: r.id, sessionId: r.session_id, peerId: r.peer_id, audience: r.audience, agentId: r.agent_id, at: Number(r.at),
          eventId: r.event_id, position: r.position, ...terms(r), ...vectorOf(r),
        } satisfies MessageDoc,
      })));
    }
    type Claim = Terms & { id: string; live: boolean; session_id: string | null; peer_id: string; audience: string | null; agent_id: string | null; message_id: string | null };
    for await (const rows of cursor<Claim>(tx, 'cairn_index_claims', `select c.id, c.state = 'current' and c.eligibility = 'eligible' as live,
        c.session_id, c.peer_id, c.audience, c.agent_id,
        case when c.authority = 'correction_memory' then null else c.message_id end as message_id, cairn_tsv_length(c.tsv) as len, t.lexemes, t.tfs
        from memory_claim c ${TERMS('c.tsv')}
       where c.account_id = ? and c.indexed_at > ? and c.indexed_at <= ?`, range)) {
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

export function createSearchIndex(opts: { orm: Orm; maxBytes: number; logger?: Logger; embedder?: Embedder | null }): SearchIndex {
  const model = opts.embedder?.model ?? null;
  const accounts = new Map<string, AccountIndex>();
  const refreshing = new Map<string, Promise<boolean>>();
  const tooLarge = new Map<string, { versions: string; at: number }>();
  const totalBytes = () => [...accounts.values()].reduce((a, t) => a + t.bytes(), 0);
  const isCurrent = (held: AccountIndex | undefined, v: Versions) => held !== undefined && held.recordVersion >= v.records && held.memoryVersion >= v.memory;

  async function refresh(accountId: string): Promise<boolean> {
    const em = opts.orm.em.fork();
    // Versions first: whatever commits later moves them past what this load is stamped with.
    const [v] = await bound<{ records: string; memory: string; estimate: string }>(em,
      sql`select ${recordVersion(accountId)} as records, ${memoryVersion(accountId)} as memory,
              coalesce((select (message_length + claim_length) * ${sql.raw(String(POSTING_BYTES))} + (messages + claims) * ${sql.raw(String(DOC_BYTES))}
                          from memory_index_version where account_id = ${accountId}), 0)::text as estimate`);
    const versions: Versions = { records: Number(v!.records), memory: Number(v!.memory) };
    const key = `${versions.records}:${versions.memory}`;
    const held = accounts.get(accountId);
    if (isCurrent(held, versions)) return true;
    const large = tooLarge.get(accountId);
    if (large && large.versions === key && Date.now() - large.at < TOO_LARGE_RETRY_MS) return false;
    const refuse = (estimate: number) => {
      accounts.delete(accountId);
      tooLarge.set(accountId, { versions: key, at: Date.now() });
      opts.logger?.info({ accountId, estimatedBytes: estimate }, 'search index: account too large to hold in memory; PostgreSQL ranks its queries');
      return false;
    };

    // Start over when most documents held are gone (their postings are dead weight).
    const index = held && held.dead * 2 <= held.size ? held : new AccountIndex();
    const fresh = index.size === 0;
    if (fresh && Number(v!.estimate) > opts.maxBytes) return refuse(Number(v!.estimate));
    if (index.recordVersion < versions.records || fresh) {
      const active = await bound<{ id: string; audience: string | null }>(em,
        "select id, audience from source where account_id = ? and status = 'active'", [accountId]);
      const activeIds = new Set(active.map((s) => s.id));
      for (const id of index.sourceIds()) if (!activeIds.has(id)) index.removeSource(id);
      const added = active.filter((s) => !index.hasSource(s.id));
      for (const s of active) index.setSource(s.id, s.audience);
      if (added.length) {
        const [size] = await bound<{ postings: string; records: string }>(em,
          'select coalesce(sum(length(tsv)), 0)::bigint as postings, count(*) as records from record where source_id = any(?::uuid[])',
          [added.map((s) => s.id)]);
        const estimate = Number(size!.postings) * POSTING_BYTES + Number(size!.records) * DOC_BYTES;
        if (index.bytes() + estimate > opts.maxBytes) return refuse(estimate);
        try {
          await loadRecords(em, index, added.map((s) => s.id), model);
        } catch (err) {
          // A copy with sources registered but not loaded would miss their records at a later version.
          accounts.delete(accountId);
          throw err;
        }
      }
      index.recordVersion = versions.records;
    }
    if (index.memoryVersion < versions.memory || fresh) {
      if ((await loadMemory(em, index, accountId, fresh, model)) === 'reset') {
        // Something was deleted since: load everything again, into a new copy.
        accounts.delete(accountId);
        return refresh(accountId);
      }
    }
    index.prepare();
    // Grown past the budget on its own (memory written since it was loaded).
    if (index.bytes() > opts.maxBytes) return refuse(index.bytes());
    tooLarge.delete(accountId);
    accounts.delete(accountId);
    accounts.set(accountId, index);
    // Least recently used accounts go first when the total is over the budget.
    let total = totalBytes();
    for (const [id, copy] of accounts) {
      if (total <= opts.maxBytes || id === accountId) break;
      total -= copy.bytes();
      accounts.delete(id);
    }
    return true;
  }

  function warm(accountId: string): Promise<boolean> {
    let p = refreshing.get(accountId);
    if (!p) {
      p = refresh(accountId).finally(() => refreshing.delete(accountId));
      refreshing.set(accountId, p);
    }
    return p;
  }

  return {
    embedder: opts.embedder ?? null,
    async current(accountId, versions, waitMs = WAIT_MS) {
      if (opts.maxBytes <= 0) return null;
      const deadline = performance.now() + waitMs;
      const timeout = new AbortController();
      const expired = sleep(waitMs, null, { signal: timeout.signal }).catch(() => null);
      try {
        for (;;) {
          const held = accounts.get(accountId);
          if (isCurrent(held, versions)) {
            // Most recently used: a Map iterates in insertion order.
            accounts.delete(accountId);
            accounts.set(accountId, held!);
            return held!;
          }
          const refreshed = warm(accountId).catch((err: unknown) => {
            opts.logger?.warn({ err }, 'search index: refresh failed');
            return false;
          });
          if (performance.now() >= deadline || (await Promise.race([refreshed, expired])) !== true) return null;
        }
      } finally {
        timeout.abort();
      }
    },
    warm,
    usage: () => ({ accounts: accounts.size, bytes: totalBytes() }),
  };
}

/** The search index an API process runs with: its memory budget and embeddings provider from the configuration. */
export function searchIndexFor(config: Pick<Config, 'query' | 'embeddings'>, orm: Orm, logger?: Logger): SearchIndex {
  return createSearchIndex({ orm, maxBytes: config.query.indexMaxBytes, ...(logger ? { logger } : {}), embedder: config.embeddings ? createEmbedder(config.embeddings) : null });
}
