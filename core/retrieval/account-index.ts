import { ADJACENT_WEIGHT, averageLength, CLAIM, idf, MESSAGE, NEIGHBOUR_DECAY, NEIGHBOURS, RECORD, termScore, totalDocs, type DocKind, type Statistics } from './bm25.ts';

/**
 * One account's searchable documents (source records, available messages, current eligible claims) as
 * an inverted index: for each lexeme, the documents holding it and how often. Search scores every
 * document of the boundary that holds a query term by BM25 (bm25.ts) with the account's statistics,
 * adds to each message its neighbours' scores, groups each claim with the message it was derived
 * from, and keeps the best. It only ranks: what it names is fetched again with the boundary applied in
 * SQL (candidates.ts), so an index a moment old never widens access.
 *
 * The API keeps one per account (search-index.ts); a query that cannot use that copy builds one from
 * PostgreSQL's candidates and passes the statistics PostgreSQL counted (retrieve.ts), so both paths rank
 * with this code.
 */

export type IndexTerm = { lexeme: string; prefix: boolean; weight?: number };
/** The lexemes one query word stands for (usually one; a prefix covers every lexeme it starts). */
export type QueryWord = IndexTerm[];

/** What a query may see, as sets (null = no restriction). */
export type Filter = {
  records: boolean;
  memory: boolean;
  audiences: ReadonlySet<string> | null;
  sourceIds: ReadonlySet<string> | null;
  peerIds: ReadonlySet<string> | null;
  sessionIds: ReadonlySet<string> | null;
  agentId: string | null;
};

export type DocTerms = {
  lexemes: string[]; tfs: number[]; length: number;
  /** Its embedding (unit length) when the account's documents are embedded (embeddings.ts). */
  vector?: Float32Array;
};
export type RecordDoc = DocTerms & { id: string; sourceId: string; tid?: number; audience?: string | null };
export type MessageDoc = DocTerms & {
  id: string; sessionId: string; peerId: string; audience: string | null; agentId: string | null;
  /** Conversation order within the session: created_at (ms), then event id, then position. */
  at: number; eventId: string; position: number;
};
export type ClaimDoc = DocTerms & {
  id: string; sessionId: string | null; peerId: string; audience: string | null; agentId: string | null;
  /** The message the claim was derived from and cites (null for a correction, which cites the user). */
  messageId: string | null;
};

export type Hit = {
  kind: DocKind; id: string; score: number;
  /** Records: where the row was when loaded (a ctid as PostgreSQL prints it, quoted for an array literal). */
  tid?: string;
  /** A claim's message, returned with it as its support instead of as a competing hit. */
  support?: string;
};

export type SearchResult = { hits: Hit[]; matched: boolean[][] };

/** Segments per lexeme before they are merged into one (each load adds one). */
const MAX_SEGMENTS = 8;
/** Estimated bytes per posting (document and frequency), per document and per lexeme. */
const POSTING_BYTES = 6;
const DOC_BYTES = 120;
const LEXEME_BYTES = 64;

type Segment = { docs: Int32Array; tfs: Uint16Array };

class Postings {
  docs = new Int32Array(8);
  tfs = new Uint16Array(8);
  n = 0;
  push(doc: number, tf: number): void {
    if (this.n === this.docs.length) {
      const docs = new Int32Array(this.n * 2);
      docs.set(this.docs);
      this.docs = docs;
      const tfs = new Uint16Array(this.n * 2);
      tfs.set(this.tfs);
      this.tfs = tfs;
    }
    this.docs[this.n] = doc;
    this.tfs[this.n++] = Math.min(tf, 65535);
  }
  segment(): Segment {
    return { docs: this.docs.slice(0, this.n), tfs: this.tfs.slice(0, this.n) };
  }
}

function merge(segments: Segment[]): Segment {
  const n = segments.reduce((a, s) => a + s.docs.length, 0);
  const docs = new Int32Array(n);
  const tfs = new Uint16Array(n);
  let at = 0;
  for (const s of segments) {
    docs.set(s.docs, at);
    tfs.set(s.tfs, at);
    at += s.docs.length;
  }
  return { docs, tfs };
}

/** The first index in [lo, hi) where `below(i)` is false, `below` being true then false along the range. */
export function lowerBound(lo: number, hi: number, below: (i: number) => boolean): number {
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (below(mid)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `base` and `added`, both sorted by `key`, as one sorted array: a binary search per added item. */
function mergeSorted<T>(base: T[], added: T[], key: (x: T) => string): T[] {
  if (!base.length) return added;
  const out: T[] = [];
  let from = 0;
  for (const x of added) {
    const k = key(x);
    const lo = lowerBound(from, base.length, (i) => key(base[i]!) < k);
    for (let i = from; i < lo; i++) out.push(base[i]!);
    out.push(x);
    from = lo;
  }
  for (let i = from; i < base.length; i++) out.push(base[i]!);
  return out;
}

/** Lexemes compare bytewise in PostgreSQL ("C"); for prefix ranges code-unit order is what matters. */
const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

/** Strings (peer, session, audience and agent ids, sources) as small integers. */
class Dictionary {
  private readonly ids = new Map<string, number>();
  readonly values: string[] = [];
  of(value: string): number {
    let i = this.ids.get(value);
    if (i === undefined) this.ids.set(value, (i = this.values.push(value) - 1));
    return i;
  }
  find(value: string): number | undefined {
    return this.ids.get(value);
  }
}

const grow = <A extends Int32Array | Float64Array | Uint8Array>(a: A, make: (n: number) => A): A => {
  const grown = make(a.length * 2);
  grown.set(a);
  return grown;
};

export class AccountIndex {
  /** The versions this copy reflects (search-index.ts). */
  recordVersion = 0;
  memoryVersion = 0;

  readonly ids: string[] = [];
  private kind = new Uint8Array(1024);
  private length = new Int32Array(1024);
  private alive = new Uint8Array(1024);
  /** Records: their source; memory: their session (-1 for a claim without one). */
  private owner = new Int32Array(1024);
  private peer = new Int32Array(1024);
  private audience = new Int32Array(1024);
  private agent = new Int32Array(1024);
  /** Claims: the message document they group with (-1: none). Messages: their place in their session. */
  private link = new Int32Array(1024);
  private tid = new Float64Array(1024);
  private readonly strings = new Dictionary();
  /** Records of each source, and whether the source is searchable; its audience. */
  private readonly sourceDocs = new Map<number, number[]>();
  private readonly sourceAudience = new Map<number, number>();
  /** Messages of each session in conversation order, with their order keys. */
  private readonly sessions = new Map<number, number[]>();
  private readonly orderKey = new Map<number, [number, string, number]>();
  private readonly byId = new Map<string, number>();
  /** Embedded documents' vectors, and the claim each message leads to (fusion groups as search does). */
  private readonly vectors = new Map<number, Float32Array>();
  private readonly claimOf = new Map<number, number>();
  private readonly terms = new Map<string, Segment[]>();
  private readonly liveDocs: [number, number, number] = [0, 0, 0];
  private readonly liveLength: [number, number, number] = [0, 0, 0];
  private postings = 0;
  dead = 0;
  /** Lexemes in bytewise order (prefix ranges), and those added since. */
  private sorted: string[] = [];
  private newLexemes: string[] = [];
  /** Document indexes in id order over the first `ordered` documents, and each one's place in it (ties). */
  private order: number[] = [];
  private ordered = 0;
  private idRank = new Int32Array(0);
  private acc = new Float64Array(0);
  private best = new Float64Array(0);
  private near = new Float64Array(0);
  private lead = new Int32Array(0);
  private isKey = new Uint8Array(0);

  get size(): number {
    return this.ids.length;
  }

  bytes(): number {
    let vectors = 0;
    for (const v of this.vectors.values()) vectors += v.byteLength;
    return this.postings * POSTING_BYTES + this.ids.length * DOC_BYTES + this.terms.size * LEXEME_BYTES + vectors;
  }

  /** Own statistics: counted over the live documents (document frequencies when asked). */
  statistics(): Statistics {
    return { docs: [...this.liveDocs], length: [...this.liveLength], df: (l) => this.documentFrequency(l) };
  }

  private newDoc(kind: DocKind, id: string, length: number): number {
    const d = this.ids.push(id) - 1;
    if (d === this.kind.length) {
      this.kind = grow(this.kind, (n) => new Uint8Array(n));
      this.length = grow(this.length, (n) => new Int32Array(n));
      this.alive = grow(this.alive, (n) => new Uint8Array(n));
      this.owner = grow(this.owner, (n) => new Int32Array(n));
      this.peer = grow(this.peer, (n) => new Int32Array(n));
      this.audience = grow(this.audience, (n) => new Int32Array(n));
      this.agent = grow(this.agent, (n) => new Int32Array(n));
      this.link = grow(this.link, (n) => new Int32Array(n));
      this.tid = grow(this.tid, (n) => new Float64Array(n));
    }
    this.kind[d] = kind;
    this.length[d] = length;
    this.alive[d] = 0;
    this.owner[d] = -1;
    this.peer[d] = -1;
    this.audience[d] = -1;
    this.agent[d] = -1;
    this.link[d] = -1;
    return d;
  }

  private kill(d: number): void {
    if (!this.alive[d]) return;
    this.alive[d] = 0;
    this.vectors.delete(d);
    this.liveDocs[this.kind[d] as DocKind]--;
    this.liveLength[this.kind[d] as DocKind] -= this.length[d]!;
    this.dead++;
  }

  private optional = (v: string | null) => (v === null ? -1 : this.strings.of(v));

  /**
   * Adds documents in one go: `add` registers them (as many calls as pages of a load) and gathers their
   * postings; `finish` makes them searchable and counted, all at once, with one segment per lexeme (a
   * claim replaces its previous version then). Documents added but not finished are invisible.
   */
  batch(): { add(docs: { kind: DocKind; doc: RecordDoc | MessageDoc | ClaimDoc }[]): void; finish(): void } {
    const built = new Map<string, Postings>();
    // Memory documents are kept until finish (their place in a session, their claim's message); records need nothing more.
    const added: { d: number; kind: DocKind; doc: MessageDoc | ClaimDoc | null }[] = [];
    const pendingVectors = new Map<number, Float32Array>();
    return {
      add: (docs) => {
        for (const { kind, doc } of docs) {
          const d = this.newDoc(kind, doc.id, doc.length);
          if (kind === RECORD) {
            const r = doc as RecordDoc;
            const s = this.strings.of(r.sourceId);
            this.owner[d] = s;
            this.tid[d] = r.tid ?? -1;
            if (!this.sourceAudience.has(s)) this.sourceAudience.set(s, this.optional(r.audience ?? null));
          } else {
            const m = doc as MessageDoc | ClaimDoc;
            this.owner[d] = this.optional(m.sessionId);
            this.peer[d] = this.strings.of(m.peerId);
            this.audience[d] = this.optional(m.audience);
            this.agent[d] = this.optional(m.agentId);
          }
          added.push({ d, kind, doc: kind === RECORD ? null : (doc as MessageDoc | ClaimDoc) });
          if (doc.vector) pendingVectors.set(d, doc.vector);
          for (let i = 0; i < doc.lexemes.length; i++) {
            const lexeme = doc.lexemes[i]!;
            let p = built.get(lexeme);
            // A new key is copied: a substring of a loaded row's string would keep all of it alive.
            if (!p) built.set(Buffer.from(lexeme).toString(), (p = new Postings()));
            p.push(d, doc.tfs[i]!);
          }
        }
      },
      finish: () => {
        for (const { d, kind, doc } of added) {
          if (doc) {
            const previous = this.byId.get(doc.id);
            if (previous !== undefined) this.kill(previous);
            this.byId.set(doc.id, d);
          }
          this.alive[d] = 1;
          this.liveDocs[kind]++;
          this.liveLength[kind] += this.length[d]!;
          if (kind === RECORD) {
            const s = this.owner[d]!;
            const list = this.sourceDocs.get(s);
            if (list) list.push(d);
            else this.sourceDocs.set(s, [d]);
          } else if (kind === MESSAGE) this.place(d, doc as MessageDoc);
        }
        // Claims find their message once every message of the batch has its place.
        for (const { d, kind, doc } of added) {
          if (kind !== CLAIM || !(doc as ClaimDoc).messageId) continue;
          this.link[d] = this.byId.get((doc as ClaimDoc).messageId!) ?? -1;
          if (this.link[d]! >= 0) this.claimOf.set(this.link[d]!, d);
        }
        for (const [d, v] of pendingVectors) this.vectors.set(d, v);
        for (const [lexeme, p] of built) {
          const seg = p.segment();
          this.postings += seg.docs.length;
          const segments = this.terms.get(lexeme);
          if (!segments) {
            this.terms.set(lexeme, [seg]);
            this.newLexemes.push(lexeme);
          } else {
            segments.push(seg);
            if (segments.length > MAX_SEGMENTS) this.terms.set(lexeme, [merge(segments)]);
          }
        }
        added.length = 0;
        built.clear();
        pendingVectors.clear();
      },
    };
  }

  /** Adds documents and makes them searchable at once (an index built from candidates). */
  add(docs: { kind: DocKind; doc: RecordDoc | MessageDoc | ClaimDoc }[]): void {
    const b = this.batch();
    b.add(docs);
    b.finish();
  }

  /** A message into its session's conversation order (appended in the usual case). */
  private place(d: number, m: MessageDoc): void {
    const s = this.owner[d]!;
    const key: [number, string, number] = [m.at, m.eventId, m.position];
    this.orderKey.set(d, key);
    let list = this.sessions.get(s);
    if (!list) this.sessions.set(s, (list = []));
    const before = (a: [number, string, number], b: [number, string, number]) => a[0] < b[0] || (a[0] === b[0] && (a[1] < b[1] || (a[1] === b[1] && a[2] < b[2])));
    const at = list.length && before(this.orderKey.get(list[list.length - 1]!)!, key)
      ? list.length
      : lowerBound(0, list.length, (i) => before(this.orderKey.get(list[i]!)!, key));
    list.splice(at, 0, d);
    for (let i = at; i < list.length; i++) this.link[list[i]!] = i;
  }

  /** Removes a document by id (a claim no longer current or eligible). */
  remove(id: string): void {
    const d = this.byId.get(id);
    if (d !== undefined) {
      this.kill(d);
      this.byId.delete(id);
    }
  }

  hasSource(sourceId: string): boolean {
    const s = this.strings.find(sourceId);
    return s !== undefined && this.sourceDocs.has(s);
  }

  sourceIds(): string[] {
    return [...this.sourceDocs.keys()].map((s) => this.strings.values[s]!);
  }

  /** Registers a searchable source (its records are added separately) and sets its audience. */
  setSource(sourceId: string, audience: string | null): void {
    const s = this.strings.of(sourceId);
    if (!this.sourceDocs.has(s)) this.sourceDocs.set(s, []);
    this.sourceAudience.set(s, this.optional(audience));
  }

  removeSource(sourceId: string): void {
    const s = this.strings.find(sourceId);
    if (s === undefined) return;
    for (const d of this.sourceDocs.get(s) ?? []) this.kill(d);
    this.sourceDocs.delete(s);
    this.sourceAudience.delete(s);
  }

  private documentFrequency(lexeme: string): number {
    let n = 0;
    for (const { docs } of this.terms.get(lexeme) ?? []) {
      if (!this.dead) n += docs.length;
      else for (let i = 0; i < docs.length; i++) n += this.alive[docs[i]!]!;
    }
    return n;
  }

  /** Brings the orders up to date with what was added (after a load, not in a query). */
  prepare(): void {
    if (this.newLexemes.length) {
      this.sorted = mergeSorted(this.sorted, this.newLexemes.sort(byCodeUnit), (x) => x);
      this.newLexemes = [];
    }
    const n = this.ids.length;
    if (this.ordered < n) {
      const ids = this.ids;
      const added = Array.from({ length: n - this.ordered }, (_, i) => this.ordered + i).sort((a, b) => byCodeUnit(ids[a]!, ids[b]!));
      this.order = mergeSorted(this.order, added, (d) => ids[d]!);
      this.ordered = n;
      this.idRank = new Int32Array(n);
      for (let i = 0; i < n; i++) this.idRank[this.order[i]!] = i;
    }
  }

  /** The lexemes a query term covers: itself, or every lexeme it is a prefix of. */
  private covered(t: IndexTerm): string[] {
    if (!t.prefix) return this.terms.has(t.lexeme) ? [t.lexeme] : [];
    this.prepare();
    const s = this.sorted;
    const out: string[] = [];
    for (let i = lowerBound(0, s.length, (j) => s[j]! < t.lexeme); i < s.length && s[i]!.startsWith(t.lexeme); i++) out.push(s[i]!);
    return out;
  }

  /** Every lexeme the query words cover here. */
  coveredLexemes(words: QueryWord[]): string[] {
    return [...new Set(words.flat().flatMap((t) => this.covered(t)))];
  }

  /** Per document, whether the filter lets a query see it (records by their source). */
  private visibility(f: Filter): (d: number) => boolean {
    const str = this.strings;
    const ids = (set: ReadonlySet<string> | null) => (set ? new Set([...set].map((v) => str.find(v)).filter((v): v is number => v !== undefined)) : null);
    const audiences = ids(f.audiences);
    const sources = ids(f.sourceIds);
    const peers = ids(f.peerIds);
    const sessions = ids(f.sessionIds);
    const agent = f.agentId === null ? null : (str.find(f.agentId) ?? -2);
    const sourceOk = new Map<number, boolean>();
    for (const [s, a] of this.sourceAudience) sourceOk.set(s, (!audiences || audiences.has(a)) && (!sources || sources.has(s)));
    return (d) => {
      if (!this.alive[d]) return false;
      if (this.kind[d] === RECORD) return f.records && sourceOk.get(this.owner[d]!) === true;
      return f.memory && (!audiences || audiences.has(this.audience[d]!)) && (!peers || peers.has(this.peer[d]!))
        && (!sessions || sessions.has(this.owner[d]!)) && (agent === null || this.agent[d] === agent);
    };
  }

  /**
   * The best `limit` hits for the query words. `stats`: statistics counted elsewhere (PostgreSQL's, for
   * an index built from candidates); otherwise this index's own. `adjacency`: add neighbours' scores.
   */
  search(f: Filter, words: QueryWord[], opts: { limit: number; adjacency: boolean; stats?: Statistics; semantic?: Float32Array }): SearchResult {
    this.prepare();
    const n = this.ids.length;
    this.reserveScratch(n);
    const visible = this.visibility(f);
    const seen = new Uint8Array(n); // 1: visible, 2: not visible (checked once per document)
    const isVisible = (d: number) => (seen[d] ? seen[d] === 1 : (seen[d] = visible(d) ? 1 : 2) === 1);
    const { touched, matched } = this.scoreWords(words, opts.stats ?? this.statistics(), isVisible);
    const scored = touched.slice();
    if (opts.adjacency) this.scoreNeighbours(touched, scored, isVisible);
    // With a query vector, the best FUSE_DEPTH lexical hits are fused with the best semantic ones.
    const lexical = this.bestHits(scored, isVisible, opts.semantic ? FUSE_DEPTH : opts.limit);
    const top = opts.semantic ? this.fuse(lexical, opts.semantic, isVisible, opts.limit) : lexical;
    const { kind, link } = this;
    const hits = top.docs.map((d, i): Hit => ({
      kind: kind[d] as DocKind, id: this.ids[d]!, score: top.scores[i]!,
      ...(kind[d] === RECORD && this.tid[d]! >= 0 ? { tid: formatTid(this.tid[d]!) } : {}),
      ...(kind[d] === CLAIM && link[d]! >= 0 && isVisible(link[d]!) ? { support: this.ids[link[d]!]! } : {}),
    }));
    return { hits, matched };
  }

  /** Grows the per-document score arrays to n documents (they are reused from search to search, zeroed). */
  private reserveScratch(n: number) {
    if (this.acc.length < n) {
      this.acc = new Float64Array(n);
      this.best = new Float64Array(n);
      this.near = new Float64Array(n);
      this.lead = new Int32Array(n).fill(-1);
      this.isKey = new Uint8Array(n);
    }
  }

  /**
   * BM25 per visible document into `acc`: the documents scored, and per query word and term whether it
   * matched anything visible.
   */
  private scoreWords(words: QueryWord[], stats: Statistics, isVisible: (d: number) => boolean) {
    const { acc, best } = this;
    const docs = totalDocs(stats);
    const avg = [averageLength(stats, RECORD), averageLength(stats, MESSAGE), averageLength(stats, CLAIM)];
    const touched: number[] = [];
    const matched = words.map((w) => w.map(() => false));
    for (const [wi, word] of words.entries()) {
      const wordTouched: number[] = [];
      for (const [ti, term] of word.entries()) {
        for (const lexeme of this.covered(term)) {
          const weight = idf(docs, stats.df(lexeme)) * (term.weight ?? 1);
          const { length, kind } = this;
          for (const { docs: ds, tfs } of this.terms.get(lexeme)!) {
            for (let i = 0; i < ds.length; i++) {
              const d = ds[i]!;
              if (!isVisible(d)) continue;
              matched[wi]![ti] = true;
              // A word counts once per document: by its best-scoring lexeme.
              const c = termScore(weight, tfs[i]!, length[d]!, avg[kind[d]!]!);
              if (c > best[d]!) {
                if (best[d] === 0) wordTouched.push(d);
                best[d] = c;
              }
            }
          }
        }
      }
      for (const d of wordTouched) {
        if (acc[d] === 0) touched.push(d);
        acc[d]! += best[d]!;
        best[d] = 0;
      }
    }
    return { touched, matched };
  }

  /** A matched message's session neighbours get a decaying share of its score in `near` (added to `scored`). */
  private scoreNeighbours(touched: number[], scored: number[], isVisible: (d: number) => boolean) {
    const { acc, near } = this;
    for (const d of touched) {
      if (this.kind[d] !== MESSAGE) continue;
      const list = this.sessions.get(this.owner[d]!)!;
      const at = this.link[d]!;
      for (let k = 1; k <= NEIGHBOURS; k++) {
        const gift = acc[d]! * NEIGHBOUR_DECAY ** (k - 1);
        for (const j of [list[at - k], list[at + k]]) {
          if (j === undefined || !isVisible(j) || near[j]! >= gift) continue;
          if (near[j] === 0 && acc[j] === 0) scored.push(j);
          near[j] = gift;
        }
      }
    }
  }

  /**
   * The best `size` hits, best first. A claim and the message it was derived from are one hit, led by
   * the claim (citing the message), scored by the better of the two. Leaves the score arrays zeroed.
   */
  private bestHits(scored: number[], isVisible: (d: number) => boolean, size: number) {
    const { acc, near, kind, link, idRank, lead, isKey } = this;
    for (const d of scored) {
      acc[d]! += ADJACENT_WEIGHT * Math.max(0, near[d]! - acc[d]!);
      near[d] = 0;
    }
    const keys: number[] = [];
    for (const d of scored) {
      let key = d;
      if (kind[d] === CLAIM && link[d]! >= 0 && isVisible(link[d]!)) {
        key = link[d]!;
        const l = lead[key]!;
        if (l < 0 || acc[d]! > acc[l]! || (acc[d] === acc[l] && idRank[d]! < idRank[l]!)) lead[key] = d;
      }
      if (!isKey[key]) {
        isKey[key] = 1;
        keys.push(key);
      }
    }
    const heap = new TopK(size, idRank);
    for (const k of keys) {
      const l = lead[k]!;
      heap.offer(l >= 0 ? l : k, l >= 0 ? Math.max(acc[k]!, acc[l]!) : acc[k]!);
      isKey[k] = 0;
      lead[k] = -1;
    }
    for (const d of scored) acc[d] = 0;
    return heap.sorted();
  }

  /**
   * The lexical hits (best first, each led by a claim or the document itself) fused with the visible
   * embedded documents nearest the query vector: one list by BM25, one by cosine, reciprocal rank
   * fusion. A message found by meaning is led by the claim derived from it, as lexical hits are.
   */
  private fuse(lexical: { docs: number[]; scores: number[] }, q: Float32Array, isVisible: (d: number) => boolean, limit: number) {
    const near = new TopK(FUSE_DEPTH, this.idRank);
    for (const [d, v] of this.vectors) {
      if (v.length !== q.length || !isVisible(d)) continue;
      let dot = 0;
      for (let i = 0; i < v.length; i++) dot += v[i]! * q[i]!;
      near.offer(d, dot);
    }
    const keyOf = (d: number) => (this.kind[d] === CLAIM && this.link[d]! >= 0 && isVisible(this.link[d]!) ? this.link[d]! : d);
    const fused = new Map<number, { lead: number; score: number }>();
    const add = (lead: number, rank: number) => {
      const key = keyOf(lead);
      const item = fused.get(key) ?? { lead, score: 0 };
      item.score += 1 / (RRF_K + rank + 1);
      fused.set(key, item);
    };
    lexical.docs.forEach((d, rank) => add(d, rank));
    near.sorted().docs.forEach((d, rank) => {
      const claim = this.claimOf.get(d);
      add(claim !== undefined && isVisible(claim) ? claim : d, rank);
    });
    const order = [...fused.values()].sort((a, b) => b.score - a.score || this.idRank[a.lead]! - this.idRank[b.lead]!).slice(0, limit);
    return { docs: order.map((x) => x.lead), scores: order.map((x) => x.score) };
  }
}

/** Ranks fused (reciprocal rank fusion): each list adds 1 / (RRF_K + rank). */
const RRF_K = 60;
/** Hits of each list that take part in the fusion. */
const FUSE_DEPTH = 100;

/** The best k of (doc, score): higher score first, then the smaller id. */
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
    if (this.k <= 0) return;
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
    const order = this.docs.map((_, i) => i).sort((a, b) => (this.worse(this.scores[a]!, this.docs[a]!, this.scores[b]!, this.docs[b]!) ? 1 : -1));
    return { docs: order.map((i) => this.docs[i]!), scores: order.map((i) => this.scores[i]!) };
  }
}

/** A ctid as PostgreSQL prints it, "(block,item)", as one number; and back, quoted for an array literal. */
export function parseTid(text: string): number {
  const comma = text.indexOf(',');
  return Number(text.slice(1, comma)) * 65536 + Number(text.slice(comma + 1, -1));
}
function formatTid(tid: number): string {
  return `"(${Math.floor(tid / 65536)},${tid % 65536})"`;
}
