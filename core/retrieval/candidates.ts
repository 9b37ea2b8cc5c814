import { contentHash } from '../../platform/hash.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EvidenceKind } from '../contracts/query.ts';
import type { ClaimDoc, Hit, MessageDoc, QueryWord, RecordDoc } from './account-index.ts';
import { CLAIM, MESSAGE, RECORD } from './bm25.ts';
import type { Boundary } from './boundary.ts';
import { candidateRows, neighbourIds, type Match, type Row, type Table, type Via } from './candidates.queries.ts';
import type { CitedRef } from './citations.ts';
import { parseTsVector, type TsVector } from './text.ts';

/**
 * Retrieval's candidates: the rows its statements read (candidates.queries.ts) as evidence to rank, from
 * the tables the boundary includes. The documents a ranking named (fetchHits); when no in-memory index
 * is current, the candidates of each table by a cheap first stage with the neighbours of the messages
 * among them (fallbackCandidates), which the same ranking code then orders; exact citations (fetchCited).
 */

type SourceOrigin = {
  type: 'source'; sourceId: string; title: string | null; url: string | null; filename: string | null; datedAt: string | null;
  span: { start: number; end: number }; sectionPath: string[]; page: number | null; audience: string | null;
};
type MessageOrigin = {
  type: 'message'; messageId: string; peer: string; session: string; role: string; agentId: string | null; eventId: string; position: number;
  createdAt: string; audience: string | null;
  /** Present (true) only on a message held for review that the caller asked for (Boundary.includeHeld). */
  held?: true;
};
type ClaimOrigin = {
  type: 'claim'; claimId: string; peer: string; session: string | null; authority: string; state: string; validFrom: string;
  agentId: string | null; audience: string | null;
};
export type Origin = SourceOrigin | MessageOrigin | ClaimOrigin;

export type Candidate = {
  ref: CitedRef;
  kind: EvidenceKind;
  text: string;
  contentHash: string;
  /** The row's tsvector (lexemes and positions), parsed once here for every later scoring step. */
  vector: TsVector;
  /** First-stage score: ts_rank, or word similarity for trigram matches. */
  firstScore: number;
  via: Via;
  /** When the content was dated (source date, message time, claim validity start). */
  date: Date;
  authority: string | null;
  origin: Origin;
  /** Messages: their session's id (conversation order is per session). */
  sessionId?: string;
  /** Claims derived from a message (not corrections): that message's id, the evidence they group with, and the span cited. */
  link?: string;
  span?: { start: number; end: number };
};

const iso = (d: unknown) => new Date(d as string).toISOString();

function toRecord(r: Row, via: Via): Candidate {
  return {
    ref: { table: 'record', id: r.id }, kind: r.kind as EvidenceKind, text: r.text, contentHash: r.content_hash as string,
    vector: parseTsVector(r.tsv), firstScore: Number(r.score), via, date: new Date(r.dated as string), authority: null,
    origin: {
      type: 'source', sourceId: r.source_id as string, title: (r.title as string) ?? null, url: (r.url as string) ?? null,
      filename: (r.filename as string) ?? null, datedAt: (r.dated_at as string) ?? null,
      span: { start: Number(r.start_offset), end: Number(r.end_offset) }, sectionPath: (r.section_path as string[]) ?? [],
      page: r.page === null || r.page === undefined ? null : Number(r.page), audience: (r.audience as string) ?? null,
    },
  };
}

function toMessage(r: Row, via: Via): Candidate {
  return {
    ref: { table: 'message', id: r.id }, kind: 'message', text: r.text, contentHash: r.content_hash as string,
    vector: parseTsVector(r.tsv), firstScore: Number(r.score), via, date: new Date(r.created_at as string), authority: null,
    origin: {
      type: 'message', messageId: r.id, peer: r.peer as string, session: r.session as string, role: r.role as string,
      agentId: (r.agent_id as string) ?? null, eventId: r.event_id as string, position: Number(r.position),
      createdAt: iso(r.created_at), audience: (r.audience as string) ?? null, ...(r.held ? { held: true as const } : {}),
    },
    sessionId: r.session_id as string,
  };
}

function toClaim(r: Row, via: Via): Candidate {
  return {
    ref: { table: 'claim', id: r.id }, kind: 'claim', text: r.text, contentHash: contentHash(r.text),
    vector: parseTsVector(r.tsv), firstScore: Number(r.score), via, date: new Date(r.valid_from as string), authority: r.authority as string,
    origin: {
      type: 'claim', claimId: r.id, peer: r.peer as string, session: (r.session as string) ?? null, authority: r.authority as string,
      state: r.state as string, validFrom: iso(r.valid_from), agentId: (r.agent_id as string) ?? null, audience: (r.audience as string) ?? null,
    },
    ...(r.link ? { link: r.link as string, span: { start: Number(r.span_start ?? 0), end: Number(r.span_end ?? 0) } } : {}),
  };
}

export type Tables = { records: boolean; messages: boolean; claims: boolean };

/** Candidates from every table the boundary includes, fetched concurrently. */
export async function fetchCandidates(em: EntityManager, b: Boundary, m: Match, { limit, tables }: { limit: number; tables?: Partial<Tables> }): Promise<Candidate[]> {
  const want: Tables = { records: b.includeSources, messages: b.includeMemory, claims: b.includeMemory, ...tables };
  const jobs: Promise<Candidate[]>[] = [];
  // Records ranked by an index were found by full text, as the SQL path finds them.
  const via: Via = m.type === 'scored' ? 'fts' : m.type;
  const run = (table: Table, map: (r: Row, via: Via) => Candidate) => candidateRows(em, b, m, { limit, table }).then((rows) => rows.map((r) => map(r, via)));
  if (want.records && b.includeSources) jobs.push(run('records', toRecord));
  if (want.messages && b.includeMemory) jobs.push(run('messages', toMessage));
  if (want.claims && b.includeMemory) jobs.push(run('claims', toClaim));
  return (await Promise.all(jobs)).flat();
}

/** The documents a ranking named (and the messages supporting its claims), by id, inside the boundary. */
export async function fetchHits(em: EntityManager, b: Boundary, hits: Hit[]): Promise<Map<string, Candidate>> {
  const records = hits.filter((h) => h.kind === RECORD);
  const messages = [...new Set(hits.flatMap((h) => [...(h.kind === MESSAGE ? [h.id] : []), ...(h.support ? [h.support] : [])]))];
  const claims = hits.filter((h) => h.kind === CLAIM).map((h) => h.id);
  const tids = records.every((h) => h.tid) ? { tids: records.map((h) => h.tid!) } : {};
  const found = await Promise.all([
    records.length
      ? fetchCandidates(em, b, { type: 'scored', ids: records.map((h) => h.id), scores: records.map((h) => h.score), ...tids }, { limit: records.length, tables: { messages: false, claims: false } })
      : [],
    messages.length ? fetchCandidates(em, b, { type: 'ids', ids: messages }, { limit: messages.length, tables: { records: false, claims: false } }) : [],
    claims.length ? fetchCandidates(em, b, { type: 'ids', ids: claims }, { limit: claims.length, tables: { records: false, messages: false } }) : [],
  ]);
  return new Map(found.flat().map((c) => [c.ref.id, c]));
}

/** The one candidate a citation names, if it is still inside the boundary. */
export async function fetchCited(em: EntityManager, b: Boundary, ref: CitedRef): Promise<Candidate | null> {
  const m: Match = { type: 'ids', ids: [ref.id] };
  const tables: Tables = { records: ref.table === 'record', messages: ref.table === 'message', claims: ref.table === 'claim' };
  const [found] = await fetchCandidates(em, b, m, { limit: 1, tables });
  return found ?? null;
}

// Without an in-memory index ---------------------------------------------------------------------

/**
 * The messages within NEIGHBOURS turns of the given ones in their sessions (conversation order:
 * created_at, event, position), inside the boundary: what adjacency needs of a message's context.
 */
async function neighbours(em: EntityManager, b: Boundary, of: Candidate[]): Promise<Candidate[]> {
  if (!of.length) return [];
  const have = new Set(of.map((c) => c.ref.id));
  const ids = (await neighbourIds(em, b, of.map((c) => c.ref.id))).filter((id) => !have.has(id));
  return ids.length ? fetchCandidates(em, b, { type: 'ids', ids }, { limit: ids.length, tables: { records: false, claims: false } }) : [];
}

/**
 * PostgreSQL's candidates for a query when no in-memory index is current: the best `limit` of each table
 * by its first stage (whole vectors: ranking needs every matching lexeme's frequency and the length),
 * with the neighbours of the messages among them.
 */
export async function fallbackCandidates(
  em: EntityManager, b: Boundary, q: { words: QueryWord[]; texts: string[]; limit: number; adjacency: boolean },
): Promise<Candidate[]> {
  const { words, texts: ws, limit, adjacency } = q;
  // The impact index takes the words (it stems them as the index did); the memory tables, an OR of the
  // lexemes as a tsquery literal (already stemmed), prefix where asked.
  const match: Match = {
    type: 'fts', words: ws, prefix: words.map((w) => w.some((t) => t.prefix)),
    tsquery: words.flat().map((t) => `'${t.lexeme.replace(/\\/g, '\\\\').replace(/'/g, "''")}'${t.prefix ? ':*' : ''}`).join(' | '),
  };
  const cands = await fetchCandidates(em, b, match, { limit });
  return adjacency ? cands.concat(await neighbours(em, b, cands.filter((c) => c.kind === 'message'))) : cands;
}

/** A candidate as a document of an index built from candidates. */
export function candidateDoc(c: Candidate): RecordDoc | MessageDoc | ClaimDoc {
  const lexemes = [...c.vector.positions.keys()];
  const terms = { lexemes, tfs: lexemes.map((l) => Math.max(1, c.vector.positions.get(l)!.length)), length: c.vector.length };
  const o = c.origin;
  if (o.type === 'source') return { id: c.ref.id, sourceId: o.sourceId, audience: o.audience, ...terms };
  if (o.type === 'message') {
    return { id: c.ref.id, sessionId: c.sessionId!, peerId: o.peer, audience: o.audience, agentId: o.agentId, at: Date.parse(o.createdAt), eventId: o.eventId, position: o.position, ...terms };
  }
  return { id: c.ref.id, sessionId: o.session, peerId: o.peer, audience: o.audience, agentId: o.agentId, messageId: c.link ?? null, ...terms };
}

