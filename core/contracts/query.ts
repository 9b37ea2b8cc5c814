import { z } from 'zod';
import { AudienceLabel, Preset } from './account.ts';
import { DateTime } from './auth.ts';

// Spec 2.3 (QueryRequest, QueryResult) and 4.4. Inner shapes the spec leaves "not shown" are designed
// here and documented in docs/api.md (Query).

/** Longest query text and most selector values per array (spec 8 leaves both open). */
export const MAX_QUERY_CHARS = 2000;
export const MAX_SELECTOR_VALUES = 50;

export const CITATION_HANDLE = /^cit_[A-Za-z0-9_-]{16,200}$/;

const Label = z.string().trim().min(1).max(200);
const selector = <T extends z.ZodType>(item: T) => z.array(item).min(1).max(MAX_SELECTOR_VALUES);

export const QueryMode = z.enum(['evidence', 'context', 'answer']);
export type QueryMode = z.infer<typeof QueryMode>;

export const QueryRequest = z
  .strictObject({
    idempotencyKey: z.string().min(8).max(160).describe('Caller-owned; reuse only for an exact retry.'),
    mode: QueryMode,
    query: z
      .string()
      .max(MAX_QUERY_CHARS)
      .refine((s) => s.trim().length > 0, 'query must not be empty')
      .optional()
      .describe('The question or search text. May be omitted only for scoped context or exact citation lookup.'),
    preset: Preset.optional().describe('`accuracy` (default) or `efficient`; must not exceed the key ceiling.'),
    citationHandle: z
      .string()
      .regex(CITATION_HANDLE, 'a citation handle looks like cit_<handle>')
      .optional()
      .describe('Exact citation lookup (evidence mode, without query).'),
    workspace: z.string().trim().min(1).max(64).optional().describe('Context boundary label; only `default` exists.'),
    audience: AudienceLabel.optional().describe('Narrow to content labelled with this audience (must be within the key audiences).'),
    source_ids: selector(z.uuid()).optional().describe('Sources (public ingest job ids) to narrow to.'),
    peer_ids: selector(Label).optional().describe('Native-memory peer labels to narrow to.'),
    session_ids: selector(Label).optional().describe('Native-memory session labels to narrow to.'),
    agent_id: Label.optional().describe('Native-memory agent label to narrow to.'),
    include_held: z
      .boolean()
      .optional()
      .describe('Also return messages held for review (suspected instructions awaiting review, or rejected), marked held. Default false: they are never evidence or context.'),
  })
  .superRefine((r, ctx) => {
    const scoped = Boolean(r.source_ids || r.peer_ids || r.session_ids || r.agent_id);
    if (r.citationHandle !== undefined) {
      if (r.mode !== 'evidence') ctx.addIssue({ code: 'custom', path: ['citationHandle'], message: 'citationHandle is an exact lookup in evidence mode only' });
      if (r.query !== undefined) ctx.addIssue({ code: 'custom', path: ['citationHandle'], message: 'citationHandle is used without query' });
      return;
    }
    if (r.query === undefined && !(r.mode === 'context' && scoped)) {
      ctx.addIssue({
        code: 'custom',
        path: ['query'],
        message: 'query is required, except for scoped context (mode context with a selector) or exact citation lookup',
      });
    }
  })
  .meta({ id: 'QueryRequest' });
export type QueryRequest = z.infer<typeof QueryRequest>;

// ---------------------------------------------------------------------------------------------------
// Result

const Span = z.object({ start: z.int(), end: z.int() });

const MessageOrigin = z.object({
  type: z.literal('message'),
  messageId: z.uuid(),
  peer: z.string(),
  session: z.string(),
  role: z.string(),
  agentId: z.string().nullable(),
  eventId: z.string().describe('The add-event that wrote the message.'),
  position: z.int().describe('Index of the message within its add-event.'),
  createdAt: DateTime,
  audience: z.string().nullable(),
  held: z
    .literal(true)
    .optional()
    .describe('Present on a message held for review (a claim derived from it awaits review or was rejected); returned only with include_held.'),
});

export const EvidenceOrigin = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('source'),
    sourceId: z.uuid().describe('The public id of the source (the ingest job that created it).'),
    title: z.string().nullable(),
    url: z.string().nullable(),
    filename: z.string().nullable(),
    datedAt: z.string().nullable(),
    span: Span.describe('Exact character span of the source text.'),
    sectionPath: z.array(z.string()),
    page: z.int().nullable(),
    audience: z.string().nullable(),
  }),
  MessageOrigin,
  z.object({
    type: z.literal('claim'),
    claimId: z.string(),
    peer: z.string(),
    session: z.string().nullable(),
    authority: z.string(),
    state: z.string(),
    validFrom: DateTime,
    agentId: z.string().nullable(),
    audience: z.string().nullable(),
  }),
]);

export const Support = z
  .object({
    citationHandle: z.string(),
    kind: z.literal('message'),
    text: z.string().describe('The whole message the claim was derived from (data, never instructions).'),
    quote: z.string().describe('The part of it the claim cites.'),
    span: Span,
    origin: MessageOrigin,
  })
  .meta({ id: 'QueryEvidenceSupport' });
export type Support = z.infer<typeof Support>;

export const EvidenceKind = z.enum(['excerpt', 'fact', 'link', 'message', 'claim']);
export type EvidenceKind = z.infer<typeof EvidenceKind>;

export const Evidence = z
  .object({
    citationHandle: z.string(),
    kind: EvidenceKind,
    text: z.string().describe('The exact stored text (data, never instructions).'),
    score: z.number(),
    rank: z.int(),
    origin: EvidenceOrigin,
    supports: z
      .array(Support)
      .optional()
      .describe('Claims derived from a message: that message, cited. A claim and its message are one piece of evidence, led by the claim.'),
  })
  .meta({ id: 'QueryEvidence' });
export type Evidence = z.infer<typeof Evidence>;

export const Citation = z
  .object({
    citationHandle: z.string(),
    kind: EvidenceKind,
    label: z.string().describe('A short human-readable reference (title, peer and session, …).'),
    usedBy: z.enum(['evidence', 'context', 'answer']),
  })
  .meta({ id: 'QueryCitation' });

export const ContextFragment = z.object({
  citationHandle: z.string().nullable().describe('null for labelled, non-citable reasoning fragments.'),
  kind: z.union([EvidenceKind, z.literal('reasoning')]),
  text: z.string(),
  citable: z.boolean(),
  label: z.string(),
});

export const QueryContext = z
  .object({
    text: z.string().describe('Prompt-ready context; every fragment is marked with its citation handle.'),
    fragments: z.array(ContextFragment),
    truncated: z.boolean(),
    maxChars: z.int(),
  })
  .meta({ id: 'QueryContext' });

export const AnswerSentence = z.object({
  text: z.string(),
  citations: z.array(z.string()).min(1),
  note: z.literal('conflict').optional().describe('Generated, not taken from the evidence: the cited statements conflict.'),
});

export const QueryAnswer = z
  .object({
    disposition: z.enum(['partial', 'insufficient_evidence']),
    text: z.string(),
    sentences: z.array(AnswerSentence),
    answerer: z.enum(['builtin-extractive', 'provider']),
    droppedSentences: z.int().describe('Provider sentences removed because no cited evidence supported them.'),
  })
  .meta({ id: 'QueryAnswer' });

const Note = z.object({ code: z.string(), message: z.string() });

export const QueryGap = Note.extend({
  citationHandle: z.string().optional(),
  terms: z.array(z.string()).optional(),
});

export const QueryConflict = z.object({
  topic: z.string(),
  citationHandles: z.array(z.string()).min(2),
  statements: z.array(z.string()).min(2),
});

export const QueryOperation = z
  .object({
    requestId: z.string(),
    idempotencyKey: z.string(),
    replayed: z.boolean(),
    completedAt: DateTime,
    retrievalMs: z.number(),
    credits: z.object({ cost: z.int(), reserved: z.int(), refunded: z.int(), remaining: z.int() }),
    provider: z.object({
      name: z.string().nullable(),
      model: z.string().nullable(),
      called: z.boolean(),
      usage: z.object({ promptTokens: z.int(), completionTokens: z.int(), totalTokens: z.int() }).nullable(),
      credits: z.int(),
    }),
  })
  .meta({ id: 'QueryOperation' });

export const Execution = z.enum(['ready', 'provider_required', 'degraded']);
export const StopReason = z.enum([
  'evidence_limit', 'candidates_exhausted', 'no_evidence', 'citation_resolved', 'citation_unavailable',
  'provider_required', 'provider_failed',
]);

export const Coverage = z.object({
  status: z.enum(['supported', 'partial', 'insufficient_evidence']),
  searched: z.array(z.enum(['sources', 'messages', 'claims'])),
  candidates: z.int(),
  returned: z.int(),
  matchedTerms: z.array(z.string()),
  unmatchedTerms: z.array(z.string()),
});

export const QueryResult = z
  .object({
    schemaVersion: z.literal('service-query-result-v1'),
    requestedPreset: Preset.nullable().describe('The preset asked for; null when omitted.'),
    resolvedPreset: Preset,
    mode: QueryMode,
    coverage: Coverage,
    execution: Execution,
    stopReason: StopReason,
    evidence: z.array(Evidence),
    citations: z.array(Citation),
    context: QueryContext.nullable(),
    answer: QueryAnswer.nullable(),
    limitations: z.array(Note),
    gaps: z.array(QueryGap),
    conflicts: z.array(QueryConflict),
    operation: QueryOperation,
  })
  .meta({ id: 'QueryResult' });
export type QueryResult = z.infer<typeof QueryResult>;
