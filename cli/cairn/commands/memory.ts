import { z } from 'zod';
import { parseFlags, UsageError } from '../../lib/dispatch.ts';
import { CliFailure } from '../failure.ts';
import type { ApiClient, Json } from '../http.ts';
import { findObjects, renderPage, tree, withoutVersion } from '../output.ts';
import { MEMORY_PAGE, PAGE_OPTIONS, PAGE_USAGE, readPages, type PageRequest } from '../pages.ts';
import { defineCommand, flag, many, str, type CairnCommand, type CommandContext } from '../registry.ts';
import { waitTimeoutMs, waitUntil, WAIT_OPTIONS } from '../wait.ts';

// Native memory basics (spec 4.5) with an API key: peers, sessions, messages, claims and write events
// in the workspace `default`. Record fields beyond those the spec names are not fixed, so results are
// rendered from what they contain; claims are found by their head_revision.

const WS = '/v1/workspaces/default';
const seg = (s: string) => encodeURIComponent(s);
const EVENT_TERMINAL = new Set(['succeeded', 'failed', 'quarantined']);

const show = (ctx: CommandContext, body: Json) => ctx.out.result(body, () => tree(withoutVersion(body)));
const page = (ctx: CommandContext, body: Json, empty: string) => ctx.out.result(body, () => renderPage(body, empty));

/** Claims inside any response (a page, one claim, a receipt), each as a block. */
function showClaims(ctx: CommandContext, body: Json, empty: string) {
  ctx.out.result(body, () => {
    const claims = findObjects(body, 'head_revision');
    return claims.length ? claims.map((c) => tree(c)).join('\n\n') : empty;
  });
}

/** A one-positional command over one route. */
function simple(def: {
  name: string; summary: string; usage: string; positional?: string;
  call: (api: ApiClient, id: string) => Promise<{ body: Json }>;
  render: (ctx: CommandContext, body: Json) => void;
}): CairnCommand {
  return defineCommand({
    name: def.name,
    summary: def.summary,
    usage: def.usage,
    positionals: def.positional ? [def.positional] : [],
    credential: 'apiKey',
    async run(ctx) {
      def.render(ctx, (await def.call(ctx.api, ctx.args.positionals[0] ?? '')).body);
    },
  });
}

/** A list over one POST …/list route, one page (--limit, --cursor) or all of them (--all). */
function list(def: {
  name: string; summary: string; usage: string; positional?: string; options?: Record<string, typeof str>;
  path: (ctx: CommandContext) => string; body?: (ctx: CommandContext) => Json; render: (ctx: CommandContext, body: Json) => void;
}): CairnCommand {
  return defineCommand({
    name: def.name,
    summary: def.summary,
    usage: `${def.usage} ${PAGE_USAGE}`,
    positionals: def.positional ? [def.positional] : [],
    credential: 'apiKey',
    options: { ...def.options, ...PAGE_OPTIONS },
    async run(ctx) {
      const fetch = async (p: PageRequest) => (await ctx.api.post(def.path(ctx), { ...def.body?.(ctx), ...p })).body;
      const again = ['cairn', def.name, ...ctx.args.positionals].join(' ');
      def.render(ctx, await readPages(ctx, MEMORY_PAGE, fetch, again));
    },
  });
}

/** --wait on a write event: polls it until it ends; an event that does not succeed fails the command. */
async function followEvent(ctx: CommandContext, eventId: string): Promise<Json> {
  const event = await waitUntil({
    read: async () => (await ctx.api.get(`${WS}/events/${seg(eventId)}`)).body,
    done: (e: Json) => EVENT_TERMINAL.has(e.status),
    describe: (e: Json) => `event ${eventId}: ${e.status}`,
    out: ctx.out,
    timeoutMs: waitTimeoutMs(ctx.args.values.timeout as string | undefined),
    what: `event ${eventId}`,
  });
  return event;
}

function failUnlessSucceeded(event: Json) {
  if (event.status !== 'succeeded') throw new CliFailure('event_failed', `event ${event.event_id ?? ''} ended ${event.status}`.replace('  ', ' '), { resultPrinted: true });
}

const peers = [
  simple({ name: 'memory peers create', summary: 'Create (or get) a peer', usage: 'cairn memory peers create PEER', positional: 'PEER',
    call: (api, id) => api.post(`${WS}/peers`, { id }), render: show }),
  list({ name: 'memory peers list', summary: 'List peers', usage: 'cairn memory peers list',
    path: () => `${WS}/peers/list`, render: (ctx, b) => page(ctx, b, 'No peers.') }),
  simple({ name: 'memory peers show', summary: 'Show a peer', usage: 'cairn memory peers show PEER', positional: 'PEER',
    call: (api, id) => api.get(`${WS}/peers/${seg(id)}`), render: show }),
];

const sessions = [
  simple({ name: 'memory sessions create', summary: 'Create (or get) a session', usage: 'cairn memory sessions create SESSION', positional: 'SESSION',
    call: (api, id) => api.post(`${WS}/sessions`, { id }), render: show }),
  list({ name: 'memory sessions list', summary: 'List sessions', usage: 'cairn memory sessions list',
    path: () => `${WS}/sessions/list`, render: (ctx, b) => page(ctx, b, 'No sessions.') }),
  simple({ name: 'memory sessions show', summary: 'Show a session', usage: 'cairn memory sessions show SESSION', positional: 'SESSION',
    call: (api, id) => api.get(`${WS}/sessions/${seg(id)}`), render: show }),
];

const messagesAdd = defineCommand({
  name: 'memory messages add',
  summary: 'Add messages to a session (a claim is derived per salient statement); --wait follows the event',
  usage: 'cairn memory messages add SESSION --peer PEER --content TEXT... [--role user|assistant|system|tool] [--agent-id A] [--no-infer] [--created-at ISO] [--source-id JOB_ID]... [--metadata JSON] [--idempotency-key KEY] [--wait [--timeout S]]',
  positionals: ['SESSION'],
  credential: 'apiKey',
  options: {
    peer: str, content: many, role: str, 'agent-id': str, 'no-infer': flag, 'created-at': str, 'source-id': many,
    metadata: str, 'idempotency-key': str, ...WAIT_OPTIONS,
  },
  async run(ctx) {
    const f = parseFlags(z.object({
      peer: z.string().min(1, 'the peer the messages are about is required'),
      content: z.array(z.string()).min(1).max(100),
      role: z.enum(['user', 'assistant', 'system', 'tool']).default('user'),
      'agent-id': z.string().min(1).optional(),
      'no-infer': z.boolean().optional(),
      'created-at': z.string().min(1).optional(),
      'source-id': z.array(z.string().min(1)).max(100).optional(),
      metadata: z.string().optional(),
      'idempotency-key': z.string().min(1).optional(),
      wait: z.boolean().optional(),
    }), ctx.args);
    let metadata: unknown;
    if (f.metadata !== undefined) {
      try {
        metadata = JSON.parse(f.metadata);
      } catch {
        throw new UsageError('--metadata: not valid JSON');
      }
    }
    const receipt = (await ctx.api.post(`${WS}/sessions/${seg(ctx.args.positionals[0]!)}/messages`, {
      peer_id: f.peer,
      messages: f.content.map((content) => ({ role: f.role, content })),
      agent_id: f['agent-id'],
      infer: f['no-infer'] ? false : undefined,
      created_at: f['created-at'],
      metadata,
      source_ids: f['source-id'],
      idempotency_key: f['idempotency-key'],
    })).body;
    if (!f.wait) {
      ctx.out.result(receipt, () => `${tree(withoutVersion(receipt))}\n\nFollow it with \`cairn memory events show ${receipt.event_id} --wait\`.`);
      return;
    }
    const event = await followEvent(ctx, receipt.event_id);
    // The claim the write derived (or the one it repeated), read once the event succeeded.
    const claimId = event.status === 'succeeded' ? (event.outcome?.claim_id ?? event.outcome?.duplicate_of) : null;
    const claim = claimId ? withoutVersion((await ctx.api.get(`${WS}/claims/${seg(claimId)}`)).body) : null;
    ctx.out.result({ ...receipt, event, claim }, () => {
      const head = tree(withoutVersion({ ...receipt, event }));
      if (!claim) return `${head}\n\nNo claim was derived${event.outcome?.note ? `: ${event.outcome.note}` : '.'}`;
      const what = event.outcome?.duplicate_of ? 'Already remembered as' : 'Derived claim';
      return `${head}\n\n${what}:\n${tree(claim, 2)}`;
    });
    failUnlessSucceeded(event);
  },
});

const messagesRedact = defineCommand({
  name: 'memory messages redact',
  summary: 'Redact one message: its content is removed for good, the claims citing it are withdrawn (history kept)',
  usage: 'cairn memory messages redact SESSION MESSAGE_ID --reason TEXT',
  positionals: ['SESSION', 'MESSAGE_ID'],
  credential: 'apiKey',
  options: { reason: str },
  async run(ctx) {
    const f = parseFlags(z.object({ reason: z.string().trim().min(1, 'say why the message is redacted (--reason)') }), ctx.args);
    const [session, message] = ctx.args.positionals as [string, string];
    show(ctx, (await ctx.api.delete(`${WS}/sessions/${seg(session)}/messages/${seg(message)}`, { reason: f.reason })).body);
  },
});

const messages = [
  messagesAdd,
  messagesRedact,
  list({ name: 'memory messages list', summary: 'List the messages of a session', usage: 'cairn memory messages list SESSION', positional: 'SESSION',
    path: (ctx) => `${WS}/sessions/${seg(ctx.args.positionals[0]!)}/messages/list`, render: (ctx, b) => page(ctx, b, 'No messages.') }),
];

/** The claim's current head_revision: given, or read from the claim just before the change. */
async function headRevision(ctx: CommandContext, id: string, given: string | undefined): Promise<string> {
  if (given) return given;
  const [claim] = findObjects((await ctx.api.get(`${WS}/claims/${seg(id)}`)).body, 'head_revision');
  if (typeof claim?.head_revision !== 'string') throw new CliFailure('invalid_response', `claim ${id} came back without a head_revision`);
  ctx.out.note(`Using the current head revision ${claim.head_revision}.`);
  return claim.head_revision;
}

const change = (verb: 'correct' | 'withdraw') => defineCommand({
  name: `memory claims ${verb}`,
  summary: verb === 'correct' ? 'Correct a claim (guarded by its head revision; read now when not given)' : 'Withdraw a claim (guarded by its head revision)',
  usage: `cairn memory claims ${verb} CLAIM ${verb === 'correct' ? '--content TEXT ' : ''}--reason TEXT [--head-revision REV]`,
  positionals: ['CLAIM'],
  credential: 'apiKey',
  options: { reason: str, 'head-revision': str, ...(verb === 'correct' ? { content: str } : {}) },
  async run(ctx) {
    const f = parseFlags(z.object({
      reason: z.string().min(1),
      'head-revision': z.string().min(1).optional(),
      content: verb === 'correct' ? z.string().min(1) : z.undefined().optional(),
    }), ctx.args);
    const id = ctx.args.positionals[0]!;
    const head_revision = await headRevision(ctx, id, f['head-revision']);
    const body = verb === 'correct'
      ? (await ctx.api.put(`${WS}/claims/${seg(id)}`, { content: f.content, head_revision, reason: f.reason })).body
      : (await ctx.api.delete(`${WS}/claims/${seg(id)}`, { head_revision, reason: f.reason })).body;
    show(ctx, body);
  },
});

const CLAIM_STATES = ['current', 'pending_review', 'withdrawn'] as const;

const claimsList = list({
  name: 'memory claims list',
  summary: 'List claims, newest first: current ones (default), or those awaiting review (--state pending_review) or withdrawn',
  usage: `cairn memory claims list [--peer PEER] [--session SESSION] [--state ${CLAIM_STATES.join('|')}]`,
  options: { peer: str, session: str, state: str },
  path: () => `${WS}/claims/list`,
  body: (ctx) => {
    const f = parseFlags(z.object({
      peer: z.string().min(1).optional(), session: z.string().min(1).optional(), state: z.enum(CLAIM_STATES).optional(),
    }), ctx.args);
    return { peer_id: f.peer, session_id: f.session, state: f.state };
  },
  render: (ctx, b) => showClaims(ctx, b, `No ${(ctx.args.values.state as string | undefined) ?? 'current'} claims.`),
});

const claims = [
  claimsList,
  simple({ name: 'memory claims show', summary: 'Show a claim', usage: 'cairn memory claims show CLAIM', positional: 'CLAIM',
    call: (api, id) => api.get(`${WS}/claims/${seg(id)}`), render: (ctx, b) => showClaims(ctx, b, '') }),
  simple({ name: 'memory claims history', summary: 'Show the history of a claim (ADD, UPDATE, DELETE)', usage: 'cairn memory claims history CLAIM', positional: 'CLAIM',
    call: (api, id) => api.get(`${WS}/claims/${seg(id)}/history`), render: (ctx, b) => page(ctx, b, 'No history.') }),
  change('correct'),
  change('withdraw'),
];

const eventsShow = defineCommand({
  name: 'memory events show',
  summary: 'Show a write event\'s status; --wait follows it until it ends',
  usage: 'cairn memory events show EVENT [--wait [--timeout S]]',
  positionals: ['EVENT'],
  credential: 'apiKey',
  options: WAIT_OPTIONS,
  async run(ctx) {
    const id = ctx.args.positionals[0]!;
    if (ctx.args.values.wait !== true) {
      show(ctx, (await ctx.api.get(`${WS}/events/${seg(id)}`)).body);
      return;
    }
    const event = await followEvent(ctx, id);
    show(ctx, event);
    failUnlessSucceeded(event);
  },
});

export const memoryCommands: CairnCommand[] = [...peers, ...sessions, ...messages, ...claims, eventsShow];
