import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.ts';
import { bound } from '../db/sql.ts';
import type { Logger } from '../logger.ts';
import type { Boundary } from './boundary.ts';
import { IMPACT, RECORD_LENGTH } from './terms.ts';

/**
 * An in-memory copy, per account, of the impact index of source records (record_term, terms.ts):
 * for each lexeme, the account's records holding it and each one's share of ts_rank(tsv, query, 1).
 * The full-text first stage then sums a few thousand floats in this process instead of having
 * PostgreSQL unnest, group and sort them, which was most of a query's database time.
 *
 * Rules that keep it exact and safe:
 * - A copy is used only when its version equals the account's record_index_version (migration
 *   0017), read in the query's first statement. Any committed change to a source row moves it;
 *   otherwise the query asks PostgreSQL (recordTermHit) and a refresh of the copy starts.
 * - It only ranks. The records it names are fetched with every boundary condition applied again in
 *   SQL (active source, audiences, selected sources), so a copy a moment old never widens access.
 * - Impacts are computed by PostgreSQL's own cairn_term_impact while loading, and sums are kept in
 *   float4 like the SQL's sum(real), so both paths rank alike.
 * - Memory is bounded (maxBytes over all accounts, least recently used evicted first); an account
 *   whose records would not fit is left to PostgreSQL.
 */

/** The account's record_index_version as text (0 before its first source change); one `?`: the account id. */
export const INDEX_VERSION_SQL = 'coalesce((select version from record_index_version where account_id = ?), 0)::text';

export type IndexTerm = { lexeme: string; prefix: boolean };
/**
 * `tids`: each record's physical place (ctid) when it was loaded, so the fetch can go straight to the
 * row instead of through the primary key; a row that has moved since (VACUUM FULL, CLUSTER) is found
 * by id instead (candidates.ts). `lengths`: each record's length as ts_rank counts it (RECORD_LENGTH),
 * so ranking need not fetch whole tsvectors to learn it. With `lexemes`: per record, which of the lexemes asked about it holds
 * (what its tsvector would show).
 */
export type TopRecords = { ids: string[]; scores: number[]; lengths: number[]; tids: string[]; lexemes?: string[][] };

export type TermIndex = {
  /**
   * The best `limit` records of the boundary for an OR of `terms`, scored as recordTermHit scores
   * them, or null when this process holds no copy at `version` (a refresh then starts).
   */
  top(boundary: Boundary, version: string, terms: IndexTerm[], limit: number, opts?: { report?: string[] }): TopRecords | null;
  /** Brings the account's copy up to date; false when the account is too large to hold. */
  warm(accountId: string): Promise<boolean>;
  /** Accounts held and their estimated bytes. */
  usage(): { accounts: number; bytes: number };
};

// Small pages: parsing one is a stretch of the API's event loop that requests wait behind.
const LOAD_PAGE = 500;
/** Segments per lexeme before they are merged into one (each incremental load adds one). */
const MAX_SEGMENTS = 8;
/** Estimated bytes per posting (record id index and impact) and per record (id string, source, length and ctid). */
const POSTING_BYTES = 8;
const RECORD_BYTES = 108;
/** A too-large account is checked again after this long, or as soon as its version changes. */
const TOO_LARGE_RETRY_MS = 10 * 60_000;

type Segment = { docs: Int32Array; impacts: Float32Array };

/** A growable pair of typed arrays (postings being loaded). */
class Postings {
  docs = new Int32Array(8);
  impacts = new Float32Array(8);
  n = 0;
  push(doc: number, impact: number): void {
    if (this.n === this.docs.length) {
      const docs = new Int32Array(this.n * 2);
      docs.set(this.docs);
      this.docs = docs;
      const impacts = new Float32Array(this.n * 2);
      impacts.set(this.impacts);
      this.impacts = impacts;
    }
    this.docs[this.n] = doc;
    this.impacts[this.n++] = impact;
  }
  segment(): Segment {
    return { docs: this.docs.slice(0, this.n), impacts: this.impacts.slice(0, this.n) };
  }
}

/** The first index in [lo, hi) where `below(i)` is false, `below` being true then false along the range. */
function lowerBound(lo: number, hi: number, below: (i: number) => boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `base` and `added`, both sorted by `key`, as one sorted array: a binary search per added item. */
function mergeSorted<T>(base: T[], added: T[], key: (x: T) => string, cmp: (a: string, b: string) => number): T[] {
  if (!base.length) return added;
  const out: T[] = [];
  let from = 0;
  for (const x of added) {
    const k = key(x);
    const lo = lowerBound(from, base.length, (i) => cmp(key(base[i]!), k) < 0);
    for (let i = from; i < lo; i++) out.push(base[i]!);
    out.push(x);
    from = lo;
  }
  for (let i = from; i < base.length; i++) out.push(base[i]!);
  return out;
}

function merge(segments: Segment[]): Segment {
  const n = segments.reduce((a, s) => a + s.docs.length, 0);
  const docs = new Int32Array(n);
  const impacts = new Float32Array(n);
  let at = 0;
  for (const s of segments) {
    docs.set(s.docs, at);
    impacts.set(s.impacts, at);
    at += s.docs.length;
  }
  return { docs, impacts };
}

/** Lexemes compare bytewise in PostgreSQL ("C"); for prefix ranges code-unit order is what matters here. */
const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

class AccountTerms {
  version = '';
  readonly sources = new Map<string, number>();
  readonly sourceIds: string[] = [];
  readonly sourceAudience: (string | null)[] = [];
  readonly sourceAlive: boolean[] = [];
  /** Records held per source: what becomes dead weight when the source goes. */
  readonly sourceDocs: number[] = [];
  readonly docIds: string[] = [];
  docSource = new Int32Array(1024);
  docLength = new Int32Array(1024);
  /** Each record's ctid when loaded, as block * 65536 + item (exact in a double). */
  docTid = new Float64Array(1024);
  readonly terms = new Map<string, Segment[]>();
  postings = 0;
  deadDocs = 0;
  /** Lexemes in bytewise order (prefix ranges), and those added since it was last brought up to date. */
  private sorted: string[] = [];
  private newLexemes: string[] = [];
  /** Record indexes in id order, covering the first `ordered` records; and each record's place in it. */
  private order = new Int32Array(0);
  private ordered = 0;
  /** Ties are broken by id as in SQL, by comparing these places instead of strings per match. */
  private idRank = new Int32Array(0);
  private acc = new Float32Array(0);
  private touched = new Int32Array(0);

  bytes(): number {
    return this.postings * POSTING_BYTES + this.docIds.length * RECORD_BYTES + this.terms.size * 64;
  }

  addSource(id: string, audience: string | null): number {
    const idx = this.sourceIds.push(id) - 1;
    this.sourceAudience.push(audience);
    this.sourceAlive.push(true);
    this.sourceDocs.push(0);
    this.sources.set(id, idx);
    return idx;
  }

  removeSource(id: string): void {
    const idx = this.sources.get(id);
    if (idx === undefined) return;
    this.sourceAlive[idx] = false;
    this.sources.delete(id);
    this.deadDocs += this.sourceDocs[idx]!;
  }

  addDoc(id: string, source: number, length: number, tid: number): number {
    const idx = this.docIds.push(id) - 1;
    if (idx === this.docSource.length) {
      const grow = <A extends Int32Array | Float64Array>(a: A, make: (n: number) => A): A => {
        const grown = make(a.length * 2);
        grown.set(a);
        return grown;
      };
      this.docSource = grow(this.docSource, (n) => new Int32Array(n));
      this.docLength = grow(this.docLength, (n) => new Int32Array(n));
      this.docTid = grow(this.docTid, (n) => new Float64Array(n));
    }
    this.docSource[idx] = source;
    this.docLength[idx] = length;
    this.docTid[idx] = tid;
    this.sourceDocs[source]!++;
    return idx;
  }

  addPostings(built: Map<string, Postings>): void {
    for (const [lexeme, p] of built) {
      const segments = this.terms.get(lexeme);
      const seg = p.segment();
      this.postings += seg.docs.length;
      if (!segments) {
        this.terms.set(lexeme, [seg]);
        this.newLexemes.push(lexeme);
        continue;
      }
      segments.push(seg);
      if (segments.length > MAX_SEGMENTS) this.terms.set(lexeme, [merge(segments)]);
    }
  }

  /**
   * Brings the orders up to date with what a load added (after a refresh, not in a query). Only the
   * additions are sorted and merged in: a small ingest into a large account costs a binary search per
   * new record and lexeme and one pass of integer copies, not a sort of everything held.
   */
  prepare(): { sorted: string[]; idRank: Int32Array } {
    if (this.newLexemes.length) {
      this.sorted = mergeSorted(this.sorted, this.newLexemes.sort(byCodeUnit), (x) => x, byCodeUnit);
      this.newLexemes = [];
    }
    const n = this.docIds.length;
    if (this.ordered < n) {
      const ids = this.docIds;
      const added = Int32Array.from({ length: n - this.ordered }, (_, i) => this.ordered + i).sort((a, b) => byCodeUnit(ids[a]!, ids[b]!));
      this.order = Int32Array.from(mergeSorted([...this.order], [...added], (d) => ids[d]!, byCodeUnit));
      this.ordered = n;
      this.idRank = new Int32Array(n);
      for (let i = 0; i < n; i++) this.idRank[this.order[i]!] = i;
    }
    return { sorted: this.sorted, idRank: this.idRank };
  }

  /** The lexemes a query term covers: itself, or every lexeme it is a prefix of. */
  private covered(t: IndexTerm): string[] {
    if (!t.prefix) return this.terms.has(t.lexeme) ? [t.lexeme] : [];
    const s = this.prepare().sorted;
    const out: string[] = [];
    for (let i = lowerBound(0, s.length, (j) => s[j]! < t.lexeme); i < s.length && s[i]!.startsWith(t.lexeme); i++) out.push(s[i]!);
    return out;
  }

  top(b: Boundary, terms: IndexTerm[], limit: number, report?: string[]): TopRecords {
    // Distinct (lexeme, prefix) pairs, as the SQL's `select distinct` counts them.
    const seen = new Set<string>();
    const q = terms.filter((t) => {
      const key = `${t.prefix ? 1 : 0}${t.lexeme}`;
      if (seen.has(key)) return false;
      seen.add(key);
      return true;
    });
    if (!q.length || limit <= 0) return { ids: [], scores: [], lengths: [], tids: [] };
    const allowed = new Uint8Array(this.sourceIds.length);
    const audiences = b.audiences ? new Set(b.audiences) : null;
    const selected = b.sourceIds ? new Set(b.sourceIds) : null;
    let everySource = true;
    for (let i = 0; i < allowed.length; i++) {
      const audience = this.sourceAudience[i] ?? null;
      allowed[i] = this.sourceAlive[i] && (!audiences || (audience !== null && audiences.has(audience)))
        && (!selected || selected.has(this.sourceIds[i]!)) ? 1 : 0;
      everySource &&= allowed[i] === 1;
    }
    if (this.acc.length < this.docIds.length) {
      this.acc = new Float32Array(this.docIds.length);
      this.touched = new Int32Array(this.docIds.length);
    }
    // The accumulator is float4, like sum(real): every addition rounds as PostgreSQL's does.
    const acc = this.acc;
    const touched = this.touched;
    let nTouched = 0;
    for (const t of q) {
      for (const lexeme of this.covered(t)) {
        for (const seg of this.terms.get(lexeme)!) {
          const { docs, impacts } = seg;
          // The common case (no selector, no audience, no source gone since the load) skips the
          // per-posting source check, two dependent loads per posting.
          const docSource = everySource ? null : this.docSource;
          for (let i = 0; i < docs.length; i++) {
            const d = docs[i]!;
            if (docSource && !allowed[docSource[d]!]) continue;
            if (acc[d] === 0) touched[nTouched++] = d;
            acc[d] = acc[d]! + impacts[i]!;
          }
        }
      }
    }
    const heap = new TopK(limit, this.prepare().idRank);
    for (let i = 0; i < nTouched; i++) {
      const d = touched[i]!;
      // (sum / count)::real, the division in float8 as PostgreSQL divides real by bigint.
      heap.offer(d, Math.fround(acc[d]! / q.length));
      acc[d] = 0;
    }
    const top = heap.sorted();
    const ids = top.docs.map((d) => this.docIds[d]!);
    const lengths = top.docs.map((d) => this.docLength[d]!);
    const tids = top.docs.map((d) => formatTid(this.docTid[d]!));
    if (!report) return { ids, scores: top.scores, lengths, tids };
    return { ids, scores: top.scores, lengths, tids, lexemes: top.docs.map((d) => report.filter((l) => this.holds(l, d))) };
  }

  /** Whether record `d` holds `lexeme`: each segment lists its records in ascending order (loads append). */
  private holds(lexeme: string, d: number): boolean {
    for (const { docs } of this.terms.get(lexeme) ?? []) {
      const at = lowerBound(0, docs.length, (i) => docs[i]! < d);
      if (at < docs.length && docs[at] === d) return true;
    }
    return false;
  }
}

/** The best k of (doc, score): higher score first, then the smaller id (the SQL's `score desc, id`). */
class TopK {
  private readonly docs: number[] = [];
  private readonly scores: number[] = [];
  private readonly k: number;
  private readonly rank: Int32Array;
  constructor(k: number, rank: Int32Array) {
    this.k = k;
    this.rank = rank;
  }

  /** Whether entry i ranks below entry j. */
  private worse(si: number, di: number, sj: number, dj: number): boolean {
    return si < sj || (si === sj && this.rank[di]! > this.rank[dj]!);
  }

  offer(doc: number, score: number): void {
    const { docs, scores } = this;
    if (docs.length < this.k) {
      docs.push(doc);
      scores.push(score);
      let i = docs.length - 1;
      while (i > 0) {
        const p = (i - 1) >> 1;
        if (!this.worse(scores[i]!, docs[i]!, scores[p]!, docs[p]!)) break;
        this.swap(i, p);
        i = p;
      }
      return;
    }
    if (!this.worse(scores[0]!, docs[0]!, score, doc)) return;
    docs[0] = doc;
    scores[0] = score;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < docs.length && this.worse(scores[l]!, docs[l]!, scores[m]!, docs[m]!)) m = l;
      if (r < docs.length && this.worse(scores[r]!, docs[r]!, scores[m]!, docs[m]!)) m = r;
      if (m === i) break;
      this.swap(i, m);
      i = m;
    }
  }

  private swap(i: number, j: number): void {
    [this.docs[i], this.docs[j]] = [this.docs[j]!, this.docs[i]!];
    [this.scores[i], this.scores[j]] = [this.scores[j]!, this.scores[i]!];
  }

  sorted(): { docs: number[]; scores: number[] } {
    const order = this.docs.map((_, i) => i)
      .sort((a, b) => (this.worse(this.scores[a]!, this.docs[a]!, this.scores[b]!, this.docs[b]!) ? 1 : -1));
    return { docs: order.map((i) => this.docs[i]!), scores: order.map((i) => this.scores[i]!) };
  }
}

type Row = { id: string; source_id: string; tid: string; len: number; lexemes: string | null; impacts: string | null };

/** A ctid as PostgreSQL prints it, "(block,item)", as one number; and back, quoted for an array literal. */
function parseTid(text: string): number {
  const comma = text.indexOf(',');
  return Number(text.slice(1, comma)) * 65536 + Number(text.slice(comma + 1, -1));
}
function formatTid(tid: number): string {
  return `"(${Math.floor(tid / 65536)},${tid % 65536})"`;
}

/** Separates lexemes in one string per record (PostgreSQL's parser never puts a control character in a lexeme). */
const SEP = '\u001f';

/** Loads the records of `sourceIds` into `into`, a page at a time from one cursor (one snapshot). */
async function loadSources(em: EntityManager, into: AccountTerms, sourceIds: string[], sourceIdx: Map<string, number>): Promise<void> {
  const built = new Map<string, Postings>();
  await em.transactional(async (tx) => {
    // Each record's lexemes with their impacts, by the SQL that writes the record_term rows
    // (terms.ts IMPACT and RECORD_LENGTH). Joined into two strings rather than
    // sent as arrays: splitting a string is native, parsing array literals in JavaScript was most of
    // the load. A float4 prints as the shortest text that reads back as the same float4.
    await bound(tx, `declare cairn_term_load no scroll cursor for
      select r.id, r.source_id, r.ctid::text as tid, l.len, t.lexemes, t.impacts
        from record r
        ${RECORD_LENGTH}
        cross join lateral (select string_agg(u.lexeme, chr(31)) as lexemes, string_agg(${IMPACT}::text, ',') as impacts
                              from unnest(r.tsv) u) t
       where r.source_id = any(?::uuid[])`, [sourceIds]);
    for (;;) {
      const rows = await bound<Row>(tx, `fetch forward ${LOAD_PAGE} from cairn_term_load`, []);
      for (const r of rows) {
        if (!r.lexemes || !r.impacts) continue;
        const doc = into.addDoc(r.id, sourceIdx.get(r.source_id)!, r.len, parseTid(r.tid));
        const lexemes = r.lexemes.split(SEP);
        const impacts = r.impacts.split(',');
        for (let i = 0; i < lexemes.length; i++) {
          const lexeme = lexemes[i]!;
          let p = built.get(lexeme);
          // A new key is copied: a substring of the record's string would keep all of it alive.
          if (!p) built.set(Buffer.from(lexeme).toString(), (p = new Postings()));
          p.push(doc, Number(impacts[i]));
        }
      }
      if (rows.length < LOAD_PAGE) break;
    }
    await bound(tx, 'close cairn_term_load', []);
  });
  into.addPostings(built);
}

export function createTermIndex(opts: { orm: Orm; maxBytes: number; logger?: Logger }): TermIndex {
  const accounts = new Map<string, AccountTerms>();
  const refreshing = new Map<string, Promise<boolean>>();
  const tooLarge = new Map<string, { version: string; at: number }>();

  const totalBytes = () => [...accounts.values()].reduce((a, t) => a + t.bytes(), 0);
  const drop = (accountId: string) => accounts.delete(accountId);
  /** Holds `terms` as the account's copy, most recently used (a Map iterates in insertion order). */
  const hold = (accountId: string, terms: AccountTerms) => {
    accounts.delete(accountId);
    accounts.set(accountId, terms);
  };

  async function refresh(accountId: string): Promise<boolean> {
    const em = opts.orm.em.fork();
    // The version is read first: whatever commits later moves it past what this load is stamped with.
    const [v] = await bound<{ version: string }>(em, `select ${INDEX_VERSION_SQL} as version`, [accountId]);
    const version = v!.version;
    const current = accounts.get(accountId);
    if (current?.version === version) return true;
    const large = tooLarge.get(accountId);
    if (large && large.version === version && Date.now() - large.at < TOO_LARGE_RETRY_MS) return false;

    const active = await bound<{ id: string; audience: string | null }>(em,
      "select id, audience from source where account_id = ? and status = 'active'", [accountId]);
    const activeIds = new Set(active.map((s) => s.id));
    let terms = current ?? new AccountTerms();
    for (const id of [...terms.sources.keys()]) if (!activeIds.has(id)) terms.removeSource(id);
    // Start over when most records held belong to sources gone since: their postings are dead weight.
    if (terms.deadDocs * 2 > terms.docIds.length) terms = new AccountTerms();
    for (const s of active) {
      const idx = terms.sources.get(s.id);
      if (idx !== undefined) terms.sourceAudience[idx] = s.audience;
    }
    const added = active.filter((s) => !terms.sources.has(s.id));
    if (added.length) {
      const [size] = await bound<{ postings: string; records: string }>(em,
        'select coalesce(sum(length(tsv)), 0)::bigint as postings, count(*) as records from record where source_id = any(?::uuid[])',
        [added.map((s) => s.id)]);
      const estimate = Number(size!.postings) * POSTING_BYTES + Number(size!.records) * RECORD_BYTES;
      if (terms.bytes() + estimate > opts.maxBytes) {
        drop(accountId);
        tooLarge.set(accountId, { version, at: Date.now() });
        opts.logger?.info({ accountId, estimatedBytes: estimate }, 'term index: account too large to hold in memory; PostgreSQL ranks its records');
        return false;
      }
      const idx = new Map(added.map((s) => [s.id, terms.addSource(s.id, s.audience)]));
      try {
        await loadSources(em, terms, added.map((s) => s.id), idx);
      } catch (err) {
        // A copy with sources registered but not loaded would miss their records at a later version.
        drop(accountId);
        throw err;
      }
    }
    terms.prepare();
    terms.version = version;
    tooLarge.delete(accountId);
    hold(accountId, terms);
    // Least recently used accounts go first when the total is over the budget.
    let total = totalBytes();
    for (const [id, held] of accounts) {
      if (total <= opts.maxBytes || id === accountId) break;
      total -= held.bytes();
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
    top(boundary, version, terms, limit, topOpts) {
      const held = accounts.get(boundary.accountId);
      if (!held || held.version !== version) {
        if (opts.maxBytes > 0 && !refreshing.has(boundary.accountId)) {
          warm(boundary.accountId).catch((err: unknown) => opts.logger?.warn({ err }, 'term index: refresh failed'));
        }
        return null;
      }
      hold(boundary.accountId, held);
      return held.top(boundary, terms, limit, topOpts?.report);
    },
    warm,
    usage: () => ({ accounts: accounts.size, bytes: totalBytes() }),
  };
}
