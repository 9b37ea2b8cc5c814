import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { parseFlags } from '../../lib/dispatch.ts';
import type { Json } from '../http.ts';
import { defineCommand, many, str } from '../registry.ts';

// The query operation (spec 4.4): evidence, context or a cited answer, each printed once. Evidence is
// numbered; the answer's sentences and the conflicts refer to those numbers. Context mode prints the
// context text itself (it already carries each fragment's handle and label), not the evidence again.

const indent = (text: string, n = 2) => text.trim().split('\n').map((l) => (l ? `${' '.repeat(n)}${l}` : l)).join('\n');
const oneLine = (text: string) => text.replace(/\s+/g, ' ').trim();
const day = (iso: unknown) => (typeof iso === 'string' ? iso.slice(0, 10) : null);

/** Where a piece of evidence comes from, in one line. */
function originLine(o: Json): string {
  if (o?.type === 'source') {
    const where = [o.page ? `p. ${o.page}` : null, o.sectionPath?.length ? o.sectionPath.join(' > ') : null].filter(Boolean).join(', ');
    return `${o.title ?? o.filename ?? o.url ?? 'source'}${o.datedAt ? `, dated ${o.datedAt}` : ''}${where ? ` (${where})` : ''}`;
  }
  if (o?.type === 'message') return `message from ${o.peer} in session ${o.session} (${o.role}, ${day(o.createdAt)})`;
  if (o?.type === 'claim') {
    return `claim about ${o.peer}${o.authority === 'correction_memory' ? ', corrected by a person' : ''}, valid from ${day(o.validFrom)}`;
  }
  return 'evidence';
}

const notes = (title: string, items: Json[] | undefined) =>
  items?.length ? `${title}:\n${items.map((n) => `  ${n.code}: ${n.message}${n.terms ? ` (${n.terms.join(', ')})` : ''}`).join('\n')}` : null;

export function renderQueryResult(r: Json, headers: Headers): string {
  const evidence: Json[] = r.evidence ?? [];
  const number = new Map<string, number>(evidence.map((e, i) => [e.citationHandle, i + 1]));
  const ref = (h: string) => (number.has(h) ? `[${number.get(h)}]` : h);
  const parts: (string | null)[] = [
    [['mode', r.mode], ['execution', r.execution], ['preset', r.resolvedPreset], ['coverage', r.coverage?.status], ['stop reason', r.stopReason]]
      .filter(([, v]) => v).map(([k, v]) => `${k} ${v}`).join(' · '),
  ];
  if (r.answer) {
    const lines = (r.answer.sentences as Json[]).map((x) => `${oneLine(x.text)} ${x.citations.map(ref).join('')}`);
    parts.push(`Answer (${r.answer.disposition}):\n${lines.length ? indent(lines.join('\n')) : '  (no sentence of the evidence answers it)'}`);
  } else if (r.mode === 'answer') {
    parts.push(`No answer (execution ${r.execution}): ${r.execution === 'provider_required' ? 'no answer provider is configured' : 'the answer provider failed'}; the evidence follows.`);
  }
  if (r.mode === 'context' && r.context) {
    parts.push(`Context (${r.context.text.length} of ${r.context.maxChars} characters${r.context.truncated ? ', truncated' : ''}):\n${indent(r.context.text)}`);
  } else if (evidence.length) {
    parts.push(`Evidence:\n${evidence.map((e, i) => `  [${i + 1}] ${e.citationHandle}  ${e.kind} · ${originLine(e.origin)}\n${indent(oneLine(e.text), 6)}`).join('\n')}`);
  }
  if (r.conflicts?.length) {
    parts.push(`Conflicts (memory and sources disagree; none is confirmed):\n${(r.conflicts as Json[]).map((c) =>
      `  ${c.topic}\n${c.citationHandles.map((h: string, i: number) => `    ${ref(h)} ${oneLine(c.statements[i] ?? '')}`).join('\n')}`).join('\n')}`);
  }
  parts.push(notes('Gaps', r.gaps), notes('Limitations', r.limitations));
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
