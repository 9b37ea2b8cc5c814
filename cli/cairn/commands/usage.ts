import { z } from 'zod';
import { parseFlags } from '../../lib/dispatch.ts';
import type { Json } from '../http.ts';
import { table, when } from '../output.ts';
import { defineCommand, str } from '../registry.ts';

// Credits, quota counters, recent ledger rows and the 30 daily buckets (GET /v1/account/usage).

const BARS = ' ▁▂▃▄▅▆▇█';

/** One character per day, scaled to the busiest day. */
function spark(values: number[]): string {
  const max = Math.max(...values, 0);
  return values.map((v) => (max === 0 ? BARS[0] : BARS[Math.ceil((v / max) * (BARS.length - 1))])).join('');
}

/** A ledger amount as people read it: debits negative, credits with a plus. */
const signed = (n: number) => (n > 0 ? `+${n}` : String(n));

const windowText = (w: Json) => `${w.used}/${w.limit} used, ${w.remaining} left (resets ${when(w.resetAt)})`;

function render(u: Json): string {
  const c = u.credits;
  const days: Json[] = u.daily;
  const sum = (k: string) => days.reduce((n, d) => n + Number(d[k] ?? 0), 0);
  return [
    `Credits: ${c.balance.totalRemaining} remaining`,
    `  monthly     ${c.monthly.remaining}${c.monthly.allowance === undefined ? '' : ` of ${c.monthly.allowance}`}, resets ${when(c.monthly.resetAt)}`,
    `  onboarding  ${c.onboarding.remaining}`,
    '',
    'Quotas:',
    table(['', 'DAILY', 'MONTHLY'], Object.entries(u.quotas).map(([metric, q]) => [`  ${metric}`, windowText((q as Json).daily), windowText((q as Json).monthly)])),
    '',
    `Last ${days.length} days (${days[0]?.date} to ${days.at(-1)?.date}, UTC):`,
    `  queries  |${spark(days.map((d) => d.queries))}| ${sum('queries')}`,
    `  ingests  |${spark(days.map((d) => d.ingests))}| ${sum('ingests')}`,
    `  credits  |${spark(days.map((d) => d.creditsCharged))}| ${sum('creditsCharged')}`,
    '',
    u.ledger.length === 0
      ? 'No ledger rows yet.'
      : `Recent ledger rows:\n${table(['WHEN', 'KIND', 'AMOUNT', 'METRIC', 'REASON'],
        u.ledger.map((r: Json) => [when(r.createdAt), r.kind, signed(r.amount), r.metric, r.reason]))}`,
  ].join('\n');
}

export const usageCommand = defineCommand({
  name: 'usage',
  summary: 'Credits, quota counters, recent ledger rows and the last 30 days',
  usage: 'cairn usage [--ledger-limit N]',
  credential: 'session',
  options: { 'ledger-limit': str },
  async run(ctx) {
    const f = parseFlags(z.object({ 'ledger-limit': z.coerce.number().int().min(1).max(100).optional() }), ctx.args);
    const body = (await ctx.api.get('/v1/account/usage', { ledgerLimit: f['ledger-limit'] })).body;
    ctx.out.result(body, () => render(body));
  },
});
