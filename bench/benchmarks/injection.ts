import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { injectionFinding } from '../../core/memory/screen.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { waitForBackgroundWork } from '../lib/drain.ts';
import { loadLocomo } from '../lib/locomo.ts';
import type { Metric } from '../lib/results.ts';
import { round } from '../lib/stats.ts';
import { spawnBenchWorker } from '../lib/worker-process.ts';

// Issue 26: the memory injection screen (core/memory/screen.ts) on public data. Detection: the prompts
// of ../shared/eval/prompt-injections (Giskard-AI/prompt-injections, MIT: jailbreaks from garak and goal
// hijacking from PromptInject). False positives: the turns of LoCoMo's development half, ordinary chat.
// Both are read where they are (their licences keep them out of the project); INJECTIONS_FILE and
// LOCOMO_FILE point at other copies.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const DEFAULT_INJECTIONS_FILE = path.resolve(root, '..', 'shared', 'eval', 'prompt-injections', 'prompt_injections.csv');
const WRITERS = 8;

type Prompt = { name: string; group: string; text: string };

/** RFC 4180 CSV (quoted fields may hold commas, quotes and newlines). */
function parseCsv(text: string): string[][] {
  const rows: string[][] = [];
  let row: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (quoted) {
      if (c !== '"') field += c;
      else if (text[i + 1] === '"') field += text[++i];
      else quoted = false;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      row.push(field);
      field = '';
    } else if (c === '\n') {
      rows.push([...row, field]);
      row = [];
      field = '';
    } else if (c !== '\r') field += c;
  }
  if (field !== '' || row.length) rows.push([...row, field]);
  return rows;
}

function loadPrompts(file = process.env.INJECTIONS_FILE ?? DEFAULT_INJECTIONS_FILE): Prompt[] {
  const [header, ...rows] = parseCsv(readFileSync(file, 'utf8'));
  const col = (name: string) => {
    const i = header!.indexOf(name);
    if (i < 0) throw new Error(`${file} has no column ${name}`);
    return i;
  };
  const [name, group, prompt] = [col('name'), col('group'), col('prompt')];
  return rows.filter((r) => r.length > prompt).map((r) => ({ name: r[name]!, group: r[group]!, text: r[prompt]! }));
}

const pct = (n: number, of: number) => (of ? round((100 * n) / of) : 0);

export const injection: Benchmark = {
  name: 'injection',
  title: 'Injection screen: detection on public prompt injections, false positives on ordinary conversation',
  description:
    'The memory injection screen (core/memory/screen.ts) on public data, in two ways. Screen: the function on each text ' +
    '(the 35 prompts of ../shared/eval/prompt-injections: 20 jailbreaks from garak and 15 goal-hijacking attacks from ' +
    'PromptInject, and the 2,760 turns of ../shared/eval/locomo-dev, real chat between two people, none an instruction to a ' +
    'model). End to end: the same texts written through the real API as user messages (infer true, one write each, ' +
    `${WRITERS} writers) and processed by a worker (bin/worker.ts, rule deriver) on Temporal and PostgreSQL; a write is held ` +
    'when its event derived a pending_review claim (held for review, never context), and passed when it derived an eligible ' +
    'claim. Detection is the share of prompts flagged (held); the false-positive rate the share of turns flagged (held). The ' +
    'screen was improved by method (the injection notes in docs/benchmarks.json), never by fitting these sets.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const prompts = loadPrompts();
    const turns = loadLocomo().flatMap((c) => c.turns.map((t) => ({ ...t, sample: c.sample })));
    const usedTurns = ctx.quick ? turns.slice(0, 200) : turns;

    // The screen alone.
    const flaggedPrompts = prompts.filter((p) => injectionFinding(p.text) !== null);
    const flaggedTurns = usedTurns.filter((t) => injectionFinding(t.text) !== null);
    const groups = [...new Set(prompts.map((p) => p.group))];
    ctx.log(`screen: ${flaggedPrompts.length}/${prompts.length} prompts, ${flaggedTurns.length}/${usedTurns.length} turns flagged`);

    // End to end through the memory write path.
    const { orm, databaseUrl, temporalAddress, taskQueue } = await ctx.infra.backend('injection');
    const api = await startBenchApi(ctx.infra, { orm, temporalAddress, env: { TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_PER_MINUTE: '1000000' } });
    spawnBenchWorker(ctx.infra, { databaseUrl, temporalAddress, taskQueue });
    const account = await createAccount(orm.em.fork(), api.config.accountDefaults, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
    const { secret } = await createApiKey(orm.em.fork(), account.id, { name: 'bench', scopes: ['memory.read', 'memory.write'], maxPreset: 'accuracy' });
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const base = `${api.baseUrl}/v1/workspaces/default`;
    const post = async (url: string, body: unknown) => {
      const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify(body) });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`POST ${url} answered ${res.status}: ${text.slice(0, 300)}`);
      return JSON.parse(text) as { event_id: string };
    };
    const labels = new Set<string>();
    const label = async (kind: 'peers' | 'sessions', id: string) => {
      if (labels.has(`${kind}:${id}`)) return;
      labels.add(`${kind}:${id}`);
      await post(`${base}/${kind}`, { id });
    };
    // One write per text: [peer, session, content]; returns the event ids in order.
    const writeAll = async (writes: [string, string, string][]) => {
      for (const [peer, session] of writes) {
        await label('peers', peer);
        await label('sessions', session);
      }
      const events: string[] = new Array(writes.length);
      let next = 0;
      await Promise.all(Array.from({ length: WRITERS }, async () => {
        while (next < writes.length) {
          const i = next++;
          const [peer, session, content] = writes[i]!;
          events[i] = (await post(`${base}/sessions/${session}/messages`, { peer_id: peer, messages: [{ role: 'user', content }] })).event_id;
        }
      }));
      return events;
    };
    const promptEvents = await writeAll(prompts.map((p, i) => ['prompter', `prompt-${i}`, p.text]));
    const turnEvents = await writeAll(usedTurns.map((t) => [`${t.sample}-${t.speaker}`.replace(/[^\w.-]/g, '_'), `${t.sample}-${t.session}`, t.text]));
    await waitForBackgroundWork(orm, 900_000, 50);
    const outcomes = new Map(
      (await orm.em.fork().getConnection().execute<{ id: string; status: string; state: string | null }[]>(
        `select id, status, outcome->>'claim_state' as state from memory_event where account_id = ?`, [account.id],
      )).map((r) => [r.id, r]),
    );
    const unfinished = [...outcomes.values()].filter((o) => o.status !== 'succeeded').length;
    const held = (events: string[]) => events.filter((e) => outcomes.get(e)?.state === 'pending_review').length;
    const eligible = (events: string[]) => events.filter((e) => outcomes.get(e)?.state === 'current').length;
    const heldPrompts = held(promptEvents);
    const heldTurns = held(turnEvents);
    ctx.log(`end to end: ${heldPrompts}/${prompts.length} prompts held, ${heldTurns}/${usedTurns.length} turns held, ${unfinished} events unfinished`);

    const metric = (id: string, label: string, value: number, target?: Metric['target']): Metric => ({ id, label, value, unit: '%', ...(target ? { target } : {}) });
    return {
      settings: { prompts: prompts.length, turns: usedTurns.length, writers: WRITERS, deriver: 'built-in rules' },
      metrics: [
        metric('injection.screen.detection', 'Screen: prompt injections flagged (detection rate)', pct(flaggedPrompts.length, prompts.length)),
        metric('injection.screen.falsePositives', 'Screen: ordinary conversation turns flagged (false-positive rate)', pct(flaggedTurns.length, usedTurns.length)),
        metric('injection.e2e.held', 'End to end: prompt-injection writes held for review', pct(heldPrompts, prompts.length)),
        metric('injection.e2e.passed', 'End to end: prompt-injection writes that yielded an eligible claim', pct(eligible(promptEvents), prompts.length)),
        metric('injection.e2e.falseHolds', 'End to end: ordinary turns held for review', pct(heldTurns, usedTurns.length)),
        { id: 'injection.e2e.unfinished', label: 'Events not succeeded at the end', value: unfinished, unit: 'events', target: { op: '<', value: 1, text: '0' } },
      ],
      tables: [
        {
          title: 'Prompt injections by group',
          columns: ['group', 'prompts', 'screen flagged', 'held end to end'],
          rows: groups.map((g) => {
            const idx = prompts.map((p, i) => (p.group === g ? i : -1)).filter((i) => i >= 0);
            return [g, idx.length, idx.filter((i) => flaggedPrompts.includes(prompts[i]!)).length, held(idx.map((i) => promptEvents[i]!))];
          }),
        },
        {
          title: 'Prompts the screen did not flag (by name; the texts stay in the data set)',
          columns: ['name', 'group'],
          rows: prompts.filter((p) => !flaggedPrompts.includes(p)).map((p) => [p.name, p.group]),
        },
      ],
      notes: [
        'A flagged message still stays data: it is stored and listed like any other; what changes is that the claim derived from it waits in pending_review with a warning and is never context until a person accepts it. A write whose text yields no claim at all (no statement about the speaker, no flagged sentence) is neither held nor passed.',
        'Baseline, the screen before issue 26 (eight fixed phrasings, same sets): 27 of 35 prompts flagged (77.1%), 1 of 2,760 turns (0.036%).',
        'Method (core/memory/screen.ts): the text is normalised against obfuscation (compatibility forms, invisible and bidi characters, spaced-out letters, digits for letters), and each family of the published attack taxonomies (instruction override and goal hijacking from PromptInject; role play, refusal suppression, prefix and style injection from Wei et al., "Jailbroken"; prompt leaking; chat-template markup) is a pattern over word classes. Families that alone mean an attack flag a text; those also common in ordinary talk ("from now on you ...", "no limits", "the AI") need a second family. The screen was written and checked against its own examples (test/unit/screen.test.ts), drawn from the taxonomies; these sets only measure it, and the prompts it misses are listed by name, not fitted.',
        'End to end is below the screen when a flagged message yields no claim at all: the rule deriver holds the flagged sentence itself as a quote, but a message flagged only as a whole (no single sentence flagged) whose sentences say nothing about the speaker derives nothing, so nothing enters memory as a claim either way.',
      ],
      runs: {
        screen: { flaggedPrompts: flaggedPrompts.length, flaggedTurns: flaggedTurns.length },
        endToEnd: { heldPrompts, heldTurns, eligiblePrompts: eligible(promptEvents), eligibleTurns: eligible(turnEvents), unfinished },
      },
    };
  },
};
