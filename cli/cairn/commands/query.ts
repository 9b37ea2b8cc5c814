import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { parseFlags } from '../../lib/dispatch.ts';
import type { Json } from '../http.ts';
import { textOf, tree } from '../output.ts';
import { defineCommand, many, str } from '../registry.ts';

// The query operation (spec 4.4): evidence, context or a cited answer. The inner shapes of evidence,
// citations and fragments are not fixed by the contract, so they are rendered from what the result
// contains: each item's text first, its citation handle (`cit_...`) beside it, every other field below.

const CITATION = /^cit_[A-Za-z0-9_-]+$/;

/** The first citation handle anywhere inside a value. */
function handleOf(v: unknown): string | null {
  if (typeof v === 'string') return CITATION.test(v) ? v : null;
  if (typeof v !== 'object' || v === null) return null;
  for (const x of Object.values(v)) {
    const h = handleOf(x);
    if (h) return h;
  }
  return null;
}

/** A numbered item: `[n] cit_x  text`, then its other fields indented. */
function item(v: unknown, n: number): string {
  const text = textOf(v);
  const handle = handleOf(v);
  const rest = typeof v === 'object' && v !== null && !Array.isArray(v)
    ? Object.fromEntries(Object.entries(v).filter(([, x]) => x !== text && x !== handle))
    : null;
  const head = `[${n}]${handle ? ` ${handle}` : ''}${text ? `  ${text.replace(/\s+/g, ' ').trim()}` : ''}`;
  return rest && Object.keys(rest).length ? `${head}\n${tree(rest, 6)}` : head;
}

const section = (title: string, value: unknown): string | null => {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) return value.length ? `${title}:\n${value.map((v, i) => `  ${item(v, i + 1).replace(/\n/g, '\n  ')}`).join('\n')}` : null;
  if (typeof value === 'object' && Object.keys(value).length === 0) return null;
  return `${title}:\n${tree(value, 2)}`;
};

/** A status value in one word: an object's own `status` when it has one (coverage), else compact JSON. */
const brief = (v: unknown): string | null => {
  if (v === null || v === undefined) return null;
  if (typeof v !== 'object') return String(v);
  const status = (v as { status?: unknown }).status;
  return typeof status === 'string' ? status : JSON.stringify(v);
};

export function renderQueryResult(r: Json, headers: Headers): string {
  const status = [
    ['mode', r.mode], ['execution', r.execution], ['preset', r.resolvedPreset], ['coverage', r.coverage], ['stop reason', r.stopReason],
  ].filter(([, v]) => v !== null && v !== undefined).map(([k, v]) => `${k} ${brief(v)}`).join(' · ');
  const parts: (string | null)[] = [status];
  if (r.answer) {
    const { disposition, ...rest } = r.answer;
    const text = textOf(rest, ['text', 'content', 'answer', 'body', 'summary']);
    const others = Object.fromEntries(Object.entries(rest).filter(([, v]) => v !== text));
    parts.push(`Answer${disposition ? ` (${disposition})` : ''}:\n${text ? `  ${text.trim().replace(/\n/g, '\n  ')}` : ''}${Object.keys(others).length ? `\n${tree(others, 2)}` : ''}`);
  } else if (r.mode === 'answer') {
    parts.push(`No answer (execution ${brief(r.execution)}).`);
  }
  if (r.context) {
    const { text, fragments, ...rest } = r.context;
    parts.push(typeof text === 'string' && text ? `Context:\n  ${text.trim().replace(/\n/g, '\n  ')}` : null);
    parts.push(section('Context fragments', fragments));
    parts.push(section('Context details', rest));
  }
  parts.push(section('Evidence', r.evidence), section('Citations', r.citations));
  parts.push(section('Limitations', r.limitations), section('Gaps', r.gaps), section('Conflicts', r.conflicts));
  const cost = headers.get('x-service-credit-cost');
  if (cost !== null) parts.push(`Credits: ${cost} spent, ${headers.get('x-service-credit-remaining') ?? '?'} remaining.`);
  return parts.filter(Boolean).join('\n\n');
}

export const queryCommand = defineCommand({
  name: 'query',
  summary: 'Ask the account\'s memory: evidence (default), context or a cited answer',
  usage: 'cairn query [TEXT] [--mode evidence|context|answer] [--preset accuracy|efficient] [--citation cit_...] [--source-id ID]... [--peer-id P]... [--session-id S]... [--agent-id A] [--workspace W] [--audience A] [--idempotency-key KEY]',
  positionals: ['TEXT?'],
  credential: 'apiKeyOrSession',
  options: {
    mode: str, preset: str, citation: str, 'source-id': many, 'peer-id': many, 'session-id': many,
    'agent-id': str, workspace: str, audience: str, 'idempotency-key': str,
  },
  async run(ctx) {
    const f = parseFlags(z.object({
      mode: z.enum(['evidence', 'context', 'answer']).default('evidence'),
      preset: z.enum(['accuracy', 'efficient']).optional(),
      citation: z.string().min(1).optional(),
      'source-id': z.array(z.string().min(1)).optional(),
      'peer-id': z.array(z.string().min(1)).optional(),
      'session-id': z.array(z.string().min(1)).optional(),
      'agent-id': z.string().min(1).optional(),
      workspace: z.string().min(1).optional(),
      audience: z.string().min(1).optional(),
      'idempotency-key': z.string().min(8).max(160).optional(),
    }), ctx.args);
    const request = {
      idempotencyKey: f['idempotency-key'] ?? `cairn-cli-${randomUUID()}`,
      mode: f.mode,
      query: ctx.args.positionals[0],
      preset: f.preset,
      citationHandle: f.citation,
      workspace: f.workspace,
      audience: f.audience,
      source_ids: f['source-id'],
      peer_ids: f['peer-id'],
      session_ids: f['session-id'],
      agent_id: f['agent-id'],
    };
    const res = await ctx.api.post('/v1/query', request);
    ctx.out.result(res.body, () => renderQueryResult(res.body, res.headers));
  },
});
