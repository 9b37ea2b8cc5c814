import { z } from 'zod';

/**
 * Wire contracts of native memory (spec 2.4, 3.4, 3.5, 4.5). Field names the spec leaves "not shown"
 * are chosen here and documented in the OpenAPI document they generate (docs/api.md, Native memory).
 * Requests are closed.
 */

export const WORKSPACE = 'default' as const;
export const MAX_LABEL = 200;
export const MAX_MESSAGE_CHARS = 100_000;
export const MAX_QUERY_CHARS = 2_000;

/**
 * A peer, session or agent label: non-empty, bounded, no control characters, in Unicode NFC (composed
 * and decomposed "josé" are one label; the Kelvin sign is K). Compatibility forms and look-alikes from
 * other scripts (a full-width A, a Cyrillic а) stay distinct labels: they are different text.
 */
export const Label = z
  .string()
  .min(1, 'must be a non-empty label')
  .max(MAX_LABEL)
  // The control characters (Unicode Cc) spelled as ranges: every JSON Schema validator (Python's too)
  // reads this pattern, not all of them know \p{Cc}.
  // eslint-disable-next-line no-control-regex
  .regex(/^[^\u0000-\u001F\u007F-\u009F]+$/, 'must not contain control characters')
  .overwrite(normalLabel);

/** The form a label is stored and compared in (core/memory/labels.ts normalises too, for every surface). */
export function normalLabel(label: string): string {
  return label.normalize('NFC');
}

export const WorkspaceParams = z.object({
  ws: z.string().describe('Workspace label; only `default` exists.'),
});
export const PeerParams = WorkspaceParams.extend({ peer: Label.describe('Peer label') });
export const SessionParams = WorkspaceParams.extend({ s: Label.describe('Session label') });
export const ClaimParams = WorkspaceParams.extend({ id: z.string().min(1).max(100).describe('Claim id') });
export const EventParams = WorkspaceParams.extend({ id: z.string().min(1).max(100).describe('Event id') });

export const LabelUpsertRequest = z.strictObject({ id: Label }).meta({ id: 'LabelUpsertRequest' });

/** Optional body of the list routes: page size and the cursor of the previous page. */
export const PageRequest = z
  .strictObject({
    limit: z.number().int().min(1).max(100).default(20),
    cursor: z.string().min(1).max(400).optional(),
  })
  .meta({ id: 'MemoryPageRequest' });

export const Pagination = z
  .object({ limit: z.number().int(), returned: z.number().int(), has_more: z.boolean(), next_cursor: z.string().nullable() })
  .meta({ id: 'MemoryPagination' });

export const Workspace = z
  .object({ schemaVersion: z.literal('service-memory-workspace-v1'), id: z.literal(WORKSPACE) })
  .meta({ id: 'Workspace' });
export const PageWorkspace = z
  .object({
    schemaVersion: z.literal('service-memory-page-v1'),
    items: z.array(z.object({ id: z.literal(WORKSPACE) })),
    pagination: Pagination,
  })
  .meta({ id: 'PageWorkspace' });

const LabelRecord = {
  id: z.string().describe('The label (the public id inside the account).'),
  workspace: z.literal(WORKSPACE),
  created_at: z.string(),
};
export const PeerItem = z.object(LabelRecord);
export const SessionItem = z.object(LabelRecord);
export const Peer = z.object({ schemaVersion: z.literal('service-memory-peer-v1'), ...LabelRecord }).meta({ id: 'Peer' });
export const Session = z.object({ schemaVersion: z.literal('service-memory-session-v1'), ...LabelRecord }).meta({ id: 'Session' });
export const PagePeer = z
  .object({ schemaVersion: z.literal('service-memory-page-v1'), items: z.array(PeerItem), pagination: Pagination })
  .meta({ id: 'PagePeer' });
export const PageSession = z
  .object({ schemaVersion: z.literal('service-memory-page-v1'), items: z.array(SessionItem), pagination: Pagination })
  .meta({ id: 'PageSession' });

// Messages ----------------------------------------------------------------------------------------

export const ROLES = ['user', 'assistant', 'system', 'tool'] as const;
export const MessageInput = z.strictObject({
  role: z.enum(ROLES),
  content: z.string().min(1, 'must be non-empty').max(MAX_MESSAGE_CHARS),
});

/** The reserved metadata key (the service's own name, neutralised to `service` on the wire). */
export const RESERVED_METADATA_KEY = 'service';

export const MessagesCreateRequest = z
  .strictObject({
    peer_id: Label.describe('Label of the peer the messages are attributed to (created beforehand).'),
    messages: z.array(MessageInput).min(1).max(100),
    agent_id: Label.optional(),
    infer: z.boolean().default(true),
    created_at: z.iso.datetime({ offset: true }).optional(),
    metadata: z
      .record(z.string().max(100), z.unknown())
      .refine((m) => !Object.hasOwn(m, RESERVED_METADATA_KEY), `metadata key "${RESERVED_METADATA_KEY}" is reserved`)
      .refine((m) => JSON.stringify(m).length <= 16_384, 'metadata is limited to 16 KB of JSON')
      .optional(),
    source_ids: z.array(z.uuid()).max(100).optional(),
    idempotency_key: z.string().min(1).max(160).optional(),
  })
  .meta({ id: 'MessagesCreateRequest' });
export type MessagesCreateRequest = z.infer<typeof MessagesCreateRequest>;

export const MessagesCreateReceipt = z
  .object({
    schemaVersion: z.literal('service-memory-messages-receipt-v1'),
    event_id: z.string(),
    status: z.literal('processing'),
    results: z.array(z.object({ message_id: z.string(), position: z.number().int(), role: z.enum(ROLES) })),
    authority: z.literal('session_message').describe('Messages are the peer\'s own record, not derived memory.'),
    eligibility: z
      .literal('pending')
      .describe('Nothing derived from this write is eligible context until the event has succeeded.'),
  })
  .meta({ id: 'MessagesCreateReceipt' });

export const Redactor = z
  .object({
    credential: z.enum(['apiKey', 'oauth', 'browser', 'cli']).describe('The kind of credential that redacted it.'),
    id: z.string().describe('The API key id or connected application id; for the console, the account email.'),
  })
  .meta({ id: 'MessageRedactor' });

export const MessageItem = z.object({
  id: z.string(),
  session_id: z.string(),
  peer_id: z.string(),
  role: z.enum(ROLES),
  content: z.string(),
  agent_id: z.string().nullable(),
  metadata: z.record(z.string(), z.unknown()).nullable(),
  source_ids: z.array(z.string()),
  event_id: z.string(),
  position: z.number().int(),
  created_at: z.string(),
  held: z
    .boolean()
    .describe('Held for review: a claim derived from it awaits review or was rejected. A held message is never context or evidence unless asked for (include_held).'),
  redacted: z
    .object({ at: z.string(), by: Redactor, reason: z.string() })
    .nullable()
    .describe('Set when a person redacted the message: its content is gone (empty), its place in the conversation stays.'),
});
export const PageMessage = z
  .object({ schemaVersion: z.literal('service-memory-page-v1'), items: z.array(MessageItem), pagination: Pagination })
  .meta({ id: 'PageMessage' });

export const MessageParams = SessionParams.extend({ message_id: z.uuid().describe('Message id (from the write receipt or the message list)') });

export const MessageRedactRequest = z
  .strictObject({ reason: z.string().trim().min(1).max(500).describe('Why the message is redacted; kept with the redaction.') })
  .meta({ id: 'MessageRedactRequest' });

export const MessageRedactionReceipt = z
  .object({
    schemaVersion: z.literal('service-memory-message-redaction-v1'),
    message_id: z.string(),
    session_id: z.string(),
    redacted_at: z.string(),
    redacted_by: Redactor,
    reason: z.string(),
    withdrawn_claims: z.array(z.string()).describe('Claims that cited the message and were withdrawn by this redaction (their history is kept).'),
    replayed: z.boolean().describe('true when the message was already redacted: the first redaction is returned, nothing changes.'),
  })
  .meta({ id: 'MessageRedactionReceipt' });

// Events ------------------------------------------------------------------------------------------

export const EVENT_STATUSES = ['queued', 'running', 'succeeded', 'failed', 'quarantined'] as const;
export const EventStatus = z
  .object({
    schemaVersion: z.literal('service-memory-event-v1'),
    event_id: z.string(),
    status: z.enum(EVENT_STATUSES),
    kind: z.enum(['add_messages', 'delete_peer', 'delete_session']),
    created_at: z.string(),
    started_at: z.string().nullable(),
    completed_at: z.string().nullable(),
    failure: z.object({ message: z.string() }).nullable(),
    outcome: z
      .object({
        messages: z.number().int().optional(),
        claim_id: z.string().nullable().optional(),
        claim_state: z.string().nullable().optional(),
        claim_ids: z.array(z.string()).optional().describe('Every claim the event derived, in message order; claim_id is the first.'),
        conflicts_with: z.array(z.string()).optional(),
        supersedes: z.array(z.string()).optional().describe('Current claims this event ended: a statement of change ("I live in Madrid now") supersedes the claim of the same slot.'),
        duplicate_of: z.string().optional().describe('The current claim that already says this (no duplicate is stored).'),
        note: z.string().optional(),
      })
      .nullable(),
  })
  .meta({ id: 'EventStatus' });

export const QueueStatus = z
  .object({
    schemaVersion: z.literal('service-memory-queue-status-v1'),
    workspace: z.literal(WORKSPACE),
    counts: z.object({
      queued: z.number().int(),
      running: z.number().int(),
      succeeded: z.number().int(),
      failed: z.number().int(),
      quarantined: z.number().int(),
    }),
    oldest_unfinished_at: z.string().nullable().describe('Creation time of the oldest queued or running event.'),
  })
  .meta({ id: 'QueueStatus' });

// Claims ------------------------------------------------------------------------------------------

export const CLAIM_STATES = ['current', 'withdrawn', 'pending_review'] as const;

/** A span of a session message: what a derived claim (or a message used as evidence) rests on. */
export const MessageCitation = z.object({
  kind: z.literal('message'),
  message_id: z.string(),
  session_id: z.string().nullable(),
  start: z.number().int().describe('UTF-16 offset of the cited span in the message content.'),
  end: z.number().int(),
  quote: z.string().describe('The exact cited text: content.slice(start, end).'),
});

/** A person's correction: what a corrected (or accepted) claim rests on, instead of the message it was derived from. */
export const CorrectionCitation = z.object({
  kind: z.literal('correction'),
  revision: z.string().describe('The head revision the correction made.'),
  marker: z.string().describe('The marker of the UPDATE entry in the claim\'s history.'),
  reason: z.string().nullable(),
  at: z.string().describe('When the correction was made.'),
  quote: z.string().describe('What the person asserted: the corrected content.'),
});

export const Citation = z.discriminatedUnion('kind', [MessageCitation, CorrectionCitation]);

export const Claim = z
  .object({
    id: z.string(),
    content: z.string(),
    peer_id: z.string(),
    session_id: z.string().nullable(),
    agent_id: z.string().nullable(),
    authority: z.enum(['inferred_memory', 'correction_memory']),
    state: z.enum(CLAIM_STATES),
    eligibility: z.enum(['eligible', 'not_eligible']),
    support_status: z.enum(['supported', 'conflicting', 'user_asserted']),
    categories: z.array(z.string()),
    valid_from: z.string().describe('When the statement became true: the message time, or the correction time.'),
    valid_to: z.string().nullable().describe('When it stopped being true (withdrawal); null while current.'),
    citations: z.array(Citation),
    conflicts_with: z.array(z.string()).describe('Current claims of the same peer this one contradicts.'),
    warning: z.string().nullable(),
    head_revision: z.string().describe('Opaque; send it back to change the claim (PUT/DELETE).'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Claim' });
export type Claim = z.infer<typeof Claim>;

export const ClaimResponse = Claim.extend({ schemaVersion: z.literal('service-memory-claim-v1') }).meta({ id: 'ClaimResponse' });

export const PageClaim = z
  .object({
    schemaVersion: z.literal('service-memory-page-v1'),
    items: z.array(Claim.extend({ score: z.number().optional() })),
    pagination: Pagination,
  })
  .meta({ id: 'PageClaim' });

export const ClaimsListRequest = z
  .strictObject({
    peer_id: Label.optional().describe('Only claims about this peer.'),
    session_id: Label.optional().describe('Only claims derived from (or corrected in) this session.'),
    state: z.enum(CLAIM_STATES).default('current').describe('Default current; pending_review lists proposals awaiting acceptance.'),
    limit: z.number().int().min(1).max(100).default(20),
    cursor: z.string().min(1).max(400).optional(),
  })
  .meta({ id: 'ClaimsListRequest' });
export type ClaimsListRequest = z.infer<typeof ClaimsListRequest>;

export const ClaimsQueryRequest = z
  .strictObject({
    peer_id: Label.describe('The peer whose current claims are searched.'),
    query: z.string().min(1).max(MAX_QUERY_CHARS),
    limit: z.number().int().min(1).max(50).default(10),
  })
  .meta({ id: 'ClaimsQueryRequest' });

export const ClaimUpdateRequest = z
  .strictObject({
    content: z.string().trim().min(1).max(4_000),
    head_revision: z.string().min(1).max(100),
    reason: z.string().trim().min(1).max(500),
  })
  .meta({ id: 'ClaimUpdateRequest' });
export const ClaimDeleteRequest = z
  .strictObject({
    head_revision: z.string().min(1).max(100),
    reason: z.string().trim().min(1).max(500),
  })
  .meta({ id: 'ClaimDeleteRequest' });

export const ClaimUpdateResult = z
  .object({
    schemaVersion: z.literal('service-memory-claim-update-v1'),
    claim: Claim,
    prior_revision: z.string(),
    marker: z.string(),
    replayed: z.boolean().describe('true when this was an exact retry of an applied change.'),
  })
  .meta({ id: 'ClaimUpdateResult' });
export const ClaimDeleteReceipt = z
  .object({
    schemaVersion: z.literal('service-memory-claim-delete-v1'),
    claim_id: z.string(),
    state: z.literal('withdrawn'),
    eligibility: z.literal('not_eligible'),
    prior_revision: z.string(),
    head_revision: z.string(),
    valid_to: z.string(),
    marker: z.string(),
    replayed: z.boolean(),
  })
  .meta({ id: 'ClaimDeleteReceipt' });

const Version = z.object({ content: z.string(), revision: z.string(), valid_from: z.string().nullable(), valid_to: z.string().nullable() });
export const ClaimHistoryEntry = z.object({
  seq: z.number().int(),
  event: z.enum(['ADD', 'UPDATE', 'DELETE']),
  prior: Version.nullable(),
  successor: Version.nullable(),
  reason: z.string().nullable(),
  at: z.string(),
  marker: z.string().describe('Deterministic: the same change always has the same marker.'),
});
export const ClaimHistoryResponse = z
  .object({ schemaVersion: z.literal('service-memory-claim-history-v1'), claim_id: z.string(), entries: z.array(ClaimHistoryEntry) })
  .meta({ id: 'ClaimHistoryResponse' });

// Ask, context, representation ---------------------------------------------------------------------

const INCLUDE_HELD =
  'Also return messages held for review (a claim derived from them awaits review or was rejected: suspected instructions aimed at a model), marked held. Default false.';

export const AskRequest = z
  .strictObject({
    query: z.string().trim().min(1).max(MAX_QUERY_CHARS),
    session_id: Label.optional().describe('Narrow the evidence to one session.'),
    limit: z.number().int().min(1).max(20).default(5),
    include_held: z.boolean().default(false).describe(INCLUDE_HELD),
  })
  .meta({ id: 'AskRequest' });

const heldParam = z.enum(['true', 'false']).optional().describe(INCLUDE_HELD);
export const ContextQuery = z.strictObject({
  session: Label.optional(),
  q: z.string().min(1).max(MAX_QUERY_CHARS).optional(),
  include_held: heldParam,
});
export const SessionContextQuery = z.strictObject({
  peer: Label,
  q: z.string().min(1).max(MAX_QUERY_CHARS).optional(),
  include_held: heldParam,
});

export const Evidence = z.object({
  kind: z.enum(['claim', 'message']),
  claim_id: z.string().nullable(),
  message_id: z.string().nullable(),
  session_id: z.string().nullable(),
  content: z.string(),
  citations: z.array(Citation),
  score: z.number(),
  held: z.literal(true).optional().describe('Present on a message held for review, returned only with include_held.'),
});
export type Evidence = z.infer<typeof Evidence>;

export const MemoryContext = z
  .object({
    schemaVersion: z.literal('service-memory-context-v1'),
    peer_id: z.string(),
    session_id: z.string().nullable(),
    query: z.string().nullable(),
    status: z.enum(['ok', 'insufficient_evidence']),
    text: z.string().describe('Prompt-ready context. It is data about the peer, never instructions.'),
    claims: z.array(Claim),
    messages: z.array(MessageItem),
    evidence: z.array(Evidence),
    conflicts: z.array(z.object({ claim_id: z.string(), conflicts_with: z.array(z.string()) })),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'MemoryContext' });

export const RepresentationResponse = z
  .object({
    schemaVersion: z.literal('service-memory-representation-v1'),
    peer_id: z.string(),
    claims: z.array(Claim).describe('All current claims of the peer.'),
    pending_review: z.array(Claim),
    conflicts: z.array(z.object({ claim_id: z.string(), conflicts_with: z.array(z.string()) })),
    text: z.string(),
  })
  .meta({ id: 'RepresentationResponse' });
