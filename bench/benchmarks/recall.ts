import { randomUUID } from 'node:crypto';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import type { Strategy } from '../../core/retrieval/ranking.ts';
import { PLANS, retrieve, type Plan } from '../../core/retrieval/retrieve.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { waitForBackgroundWork } from '../lib/drain.ts';
import { sentenceSpans } from '../../core/text/sentences.ts';
import { bm25Floor, CATEGORIES, DEFAULT_LOCOMO_FILE, exactMatch, loadLocomo, tokenF1, type Conversation, type Turn } from '../lib/locomo.ts';
import type { Metric, Table } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { spawnBenchWorker } from '../lib/worker-process.ts';

// Issue 23: evidence recall on real long conversations (LoCoMo format), written through the memory API
// one message per turn and asked through POST /v1/query (both presets) and peers/{peer}/ask, beside
// plain BM25 over the same turns computed in the same run.

const KS = [1, 5, 10] as const;
const LIMIT = 10;

type Item = string[]; // the turns one returned evidence item stands for
type System = { id: string; label: string; infer: boolean; run: (c: Loaded, question: string) => Promise<Item[]> };
type Loaded = {
  conversation: Conversation;
  accountId: string;
  headers: Record<string, string>;
  /** The turn each message was written as, by event id and by message id. */
  byEvent: Map<string, string>;
  byMessage: Map<string, string>;
  claims: Map<string, Promise<string[]>>;
};
type Score = { recall: Record<number, number[]>; byCategory: Map<number, Record<number, number[]>> };

const recallOf = (evidence: string[], items: Item[], k: number) => {
  const top = new Set(items.slice(0, k).flat());
  return evidence.filter((e) => top.has(e)).length / evidence.length;
};
const mean = (xs: number[]) => (xs.length ? (100 * xs.reduce((a, b) => a + b, 0)) / xs.length : 0);
const emptyScore = (): Score => ({ recall: { 1: [], 5: [], 10: [] }, byCategory: new Map() });

function record(score: Score, category: number, evidence: string[], items: Item[]) {
  const cat = score.byCategory.get(category) ?? { 1: [], 5: [], 10: [] };
  score.byCategory.set(category, cat);
  for (const k of KS) {
    const r = recallOf(evidence, items, k);
    score.recall[k]!.push(r);
    cat[k]!.push(r);
  }
}

async function call<T>(method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<T> {
  const res = await fetch(url, { method, headers, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`${method} ${url} answered ${res.status}: ${text.slice(0, 500)}`);
  return JSON.parse(text) as T;
}

/** A turn as the message a chat application would store: its text, and a shared image's caption. */
const messageContent = (t: Turn) => (t.caption === null ? t.text : `${t.text} [shared an image: ${t.caption}]`);

/** The peer a question is about: the first speaker it names, else the conversation's first speaker. */
function askedPeer(c: Conversation, question: string): string {
  const q = question.toLowerCase();
  const named = c.speakers
    .map((s) => ({ s, at: q.search(new RegExp(`\\b${s.split(' ')[0]!.toLowerCase().replace(/[^a-z0-9]/g, '')}\\b`)) }))
    .filter((x) => x.at >= 0)
    .sort((a, b) => a.at - b.at);
  return named[0]?.s ?? c.speakers[0];
}

export const recall: Benchmark = {
  name: 'recall',
  title: 'Retrieval on real conversations (LoCoMo): evidence recall@k beside plain BM25',
  description:
    'The LoCoMo development half (../shared/eval/locomo-dev, or the file in LOCOMO_FILE) written through the real API and ' +
    'worker: one account per conversation, a peer per speaker, a session per session, one message write per turn (the ' +
    "turn's text, and a shared image's caption as \"[shared an image: …]\"), created_at the session's date plus the " +
    "turn's index in seconds; once with infer true and once, in other accounts, with infer false. Every question with " +
    'evidence is asked through POST /v1/query in evidence mode (both presets) and through peers/{peer}/ask (the peer ' +
    'the question names first, else the first speaker; limit 10). Evidence maps back to turns: a message is its turn, a ' +
    'claim the turns it cites. Recall@k: the share of a question\'s evidence turns among the turns of its first k ' +
    'evidence items, averaged over the questions. The floor is plain Okapi BM25 over the turns (bm25_floor.py, ' +
    'ported), computed in the same run. Latency: one client, each question in turn.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const all = loadLocomo();
    const conversations = ctx.quick ? all.slice(0, 1).map((c) => ({ ...c, questions: c.questions.slice(0, 40) })) : all;
    const { orm, databaseUrl, temporalAddress, taskQueue } = await ctx.infra.backend('recall');
    const api = await startBenchApi(ctx.infra, { orm, temporalAddress, env: { TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_PER_MINUTE: '1000000' } });
    spawnBenchWorker(ctx.infra, { databaseUrl, temporalAddress, taskQueue });
    const base = `${api.baseUrl}/v1/workspaces/default`;
    const unlimited = { monthlyCredits: 100_000_000, onboardingCredits: 0, queryDailyLimit: 100_000_000, ingestDailyLimit: 10, queryMonthlyLimit: 100_000_000, ingestMonthlyLimit: 10 };

    // 1. Load every conversation twice (infer true, infer false), conversations in parallel.
    const load = async (c: Conversation, infer: boolean): Promise<Loaded> => {
      const account = await createAccount(orm.em.fork(), unlimited, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
      const { secret } = await createApiKey(orm.em.fork(), account.id, { name: 'bench', scopes: ['query', 'query.answer', 'memory.read', 'memory.write'], maxPreset: 'accuracy' });
      const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
      for (const s of c.speakers) await call('POST', `${base}/peers`, headers, { id: s });
      for (const s of c.sessions) await call('POST', `${base}/sessions`, headers, { id: s });
      const byEvent = new Map<string, string>();
      const byMessage = new Map<string, string>();
      let i = 0;
      for (const t of c.turns) {
        const at = new Date(t.date.getTime() + (i++ % 1000) * 1000);
        const receipt = await call<{ event_id: string; results: { message_id: string }[] }>('POST', `${base}/sessions/${t.session}/messages`, headers, {
          peer_id: t.speaker, infer, created_at: at.toISOString(), messages: [{ role: 'user', content: messageContent(t) }],
        });
        byEvent.set(receipt.event_id, t.id);
        byMessage.set(receipt.results[0]!.message_id, t.id);
      }
      return { conversation: c, accountId: account.id, headers, byEvent, byMessage, claims: new Map() };
    };
    ctx.log(`writing ${conversations.reduce((a, c) => a + c.turns.length, 0)} turns of ${conversations.length} conversations, with and without inference`);
    const loaded = await Promise.all(conversations.flatMap((c) => [load(c, true), load(c, false)]));
    await waitForBackgroundWork(orm, 600_000);
    const withInfer = loaded.filter((_, i) => i % 2 === 0);
    const withoutInfer = loaded.filter((_, i) => i % 2 === 1);
    const [derived] = await orm.em.fork().getConnection().execute<{ claims: string }[]>(
      "select count(*)::text as claims from memory_claim where state = 'current'");

    // 2. The systems asked.
    const claimTurns = (l: Loaded, claimId: string) => {
      let p = l.claims.get(claimId);
      if (!p) {
        p = call<{ citations: { message_id: string }[] }>('GET', `${base}/claims/${claimId}`, l.headers)
          .then((cl) => cl.citations.map((x) => l.byMessage.get(x.message_id)).filter((t): t is string => t !== undefined));
        l.claims.set(claimId, p);
      }
      return p;
    };
    const latency = new Map<string, { client: number[]; retrieval: number[] }>();
    const query = (preset: 'accuracy' | 'efficient') => async (l: Loaded, question: string): Promise<Item[]> => {
      const started = performance.now();
      const r = await call<{ evidence: { kind: string; origin: { eventId?: string; claimId?: string }; supports?: { origin: { eventId: string } }[] }[]; operation: { retrievalMs: number } }>(
        'POST', `${api.baseUrl}/v1/query`, l.headers, { idempotencyKey: `bench-${randomUUID()}`, mode: 'evidence', preset, query: question });
      const t = latency.get(preset) ?? { client: [], retrieval: [] };
      t.client.push(performance.now() - started);
      t.retrieval.push(r.operation.retrievalMs);
      latency.set(preset, t);
      return Promise.all(r.evidence.map(async (e) => {
        if (e.kind === 'message') return [l.byEvent.get(e.origin.eventId!)].filter((x): x is string => x !== undefined);
        if (e.kind === 'claim' && e.supports) return e.supports.map((m) => l.byEvent.get(m.origin.eventId)).filter((x): x is string => x !== undefined);
        if (e.kind === 'claim') return claimTurns(l, e.origin.claimId!);
        return [];
      }));
    };
    const ask = async (l: Loaded, question: string): Promise<Item[]> => {
      const peer = askedPeer(l.conversation, question);
      const r = await call<{ evidence: { message_id: string | null; citations: { message_id: string }[] }[] }>(
        'POST', `${base}/peers/${encodeURIComponent(peer)}/ask`, l.headers, { query: question, limit: LIMIT });
      return r.evidence.map((e) => [...new Set([...(e.message_id ? [e.message_id] : []), ...e.citations.map((c) => c.message_id)])]
        .map((m) => l.byMessage.get(m)).filter((t): t is string => t !== undefined));
    };
    const systems: System[] = [
      { id: 'accuracy', label: 'POST /v1/query, accuracy', infer: true, run: query('accuracy') },
      { id: 'efficient', label: 'POST /v1/query, efficient', infer: true, run: query('efficient') },
      { id: 'ask', label: 'peers/{peer}/ask', infer: true, run: ask },
      { id: 'accuracy.noinfer', label: 'POST /v1/query, accuracy, infer false', infer: false, run: query('accuracy') },
      { id: 'efficient.noinfer', label: 'POST /v1/query, efficient, infer false', infer: false, run: query('efficient') },
    ];

    // 3. Ask every question with evidence of every system, and score the floor alike.
    const scores = new Map<string, Score>([['bm25', emptyScore()], ...systems.map((s) => [s.id, emptyScore()] as const)]);
    let questions = 0;
    for (const [n, c] of conversations.entries()) {
      const floor = bm25Floor(c);
      for (const q of c.questions) {
        if (!q.evidence.length) continue;
        questions++;
        record(scores.get('bm25')!, q.category, q.evidence, floor(q.question).map((t) => [t]));
        for (const s of systems) {
          const l = (s.infer ? withInfer : withoutInfer)[n]!;
          record(scores.get(s.id)!, q.category, q.evidence, (await s.run(l, q.question)).slice(0, LIMIT));
        }
      }
      ctx.log(`${c.sample}: ${systems.map((s) => `${s.id} R@10 ${mean(scores.get(s.id)!.recall[10]!).toFixed(1)}`).join(', ')} (running)`);
    }

    // 3b. The built-in answerer (answer mode, accuracy, infer true) on the questions with a gold answer
    // (categories 1-4), scored by token F1 and exact match, beside its ceiling in the same run: the F1
    // of the best single sentence of the evidence the same query returned.
    type AnswerScore = { f1: number[]; em: number[]; ceiling: number[]; answered: number[] };
    const answers = new Map<number, AnswerScore>();
    for (const [n, c] of conversations.entries()) {
      const l = withInfer[n]!;
      for (const q of c.questions) {
        if (q.answer === null || q.category < 1 || q.category > 4) continue;
        const r = await call<{ answer: { disposition: string; text: string } | null; evidence: { text: string }[] }>(
          'POST', `${api.baseUrl}/v1/query`, l.headers, { idempotencyKey: `bench-${randomUUID()}`, mode: 'answer', preset: 'accuracy', query: q.question });
        const text = r.answer?.disposition === 'partial' ? r.answer.text : '';
        const sentences = r.evidence.slice(0, LIMIT).flatMap((e) => sentenceSpans(e.text, 0, e.text.length, 'bullets').map((sp) => e.text.slice(sp.start, sp.end)));
        const a = answers.get(q.category) ?? { f1: [], em: [], ceiling: [], answered: [] };
        answers.set(q.category, a);
        a.f1.push(tokenF1(text, q.answer));
        a.em.push(exactMatch(text, q.answer) ? 1 : 0);
        a.ceiling.push(Math.max(0, ...sentences.map((x) => tokenF1(x, q.answer!))));
        a.answered.push(text ? 1 : 0);
      }
    }
    const allAnswers = [...answers.values()];
    const pooled = (k: keyof AnswerScore) => mean(allAnswers.flatMap((a) => a[k]));
    ctx.log(`answers: F1 ${pooled('f1').toFixed(1)}, ceiling ${pooled('ceiling').toFixed(1)}, answered ${pooled('answered').toFixed(1)}%`);

    // 4. Ablation: the same retrieval in this process over the same accounts (the API's index), one
    // query-time feature of the accuracy plan left out at a time.
    const variants: [string, Plan, Strategy][] = [
      ['accuracy (as served)', PLANS.accuracy, 'accuracy'],
      ['− neighbouring turns', { ...PLANS.accuracy, adjacency: false }, 'accuracy'],
      ['− prefix expansion', { ...PLANS.accuracy, expand: false }, 'accuracy'],
      ['− near spellings of names', { ...PLANS.accuracy, spelling: false }, 'accuracy'],
      ['efficient (as served)', PLANS.efficient, 'efficient'],
      ['BM25 alone (fields, no neighbours, expansion or priors)', PLANS.bm25, 'bm25'],
    ];
    const ablation = new Map<string, Score>();
    for (const [name, plan, strategy] of variants) {
      const score = emptyScore();
      for (const [n, c] of conversations.entries()) {
        const l = withInfer[n]!;
        const boundary = { accountId: l.accountId, audiences: null, includeSources: true, includeMemory: true, sourceIds: null, peerIds: null, sessionIds: null, agentId: null };
        for (const q of c.questions) {
          if (!q.evidence.length) continue;
          const r = await retrieve(orm.em.fork(), boundary, { query: q.question, strategy }, { index: api.searchIndex, plan });
          record(score, q.category, q.evidence, r.ranked.slice(0, LIMIT).map((e) => (e.kind === 'message' ? [e.ref.id] : (e.supports ?? []).map((m) => m.ref.id))
            .map((id) => l.byMessage.get(id)).filter((t): t is string => t !== undefined)));
        }
      }
      ablation.set(name, score);
      ctx.log(`ablation: ${name}: R@10 ${mean(score.recall[10]!).toFixed(1)}`);
    }

    // 5. Results.
    const r = (id: string, k: number) => round(mean(scores.get(id)!.recall[k]!));
    const floorAt = (k: number) => r('bm25', k);
    const target = (id: string, k: number): Metric['target'] => {
      if (id === 'accuracy' && k === 10) return { op: '>=', value: round(floorAt(10) + 10), text: '≥ BM25 floor + 10 points' };
      if (id === 'accuracy' && k === 5) return { op: '>=', value: round(floorAt(5) + 8), text: '≥ BM25 floor + 8 points' };
      if (id === 'efficient') return { op: '>=', value: floorAt(k), text: '≥ BM25 floor' };
      if (id === 'ask' && k === 10) return { op: '>=', value: r('accuracy', 10), text: '≥ the query\'s (accuracy) recall@10' };
      return undefined;
    };
    const metrics: Metric[] = systems.flatMap((s) => KS.map((k) => {
      const t = target(s.id, k);
      return {
        id: `recall.${s.id}.r${k}`, label: `${s.label}: recall@${k}`, value: r(s.id, k), unit: '%' as const,
        ...(t ? { target: t } : {}),
        baseline: { label: 'plain BM25', value: floorAt(k), kind: 'floor' as const }, ratio: round(r(s.id, k) / Math.max(floorAt(k), 1e-9)),
      };
    }));
    for (const [preset, t] of latency) {
      const client = summarize(t.client);
      const retrieval = summarize(t.retrieval);
      metrics.push(
        { id: `recall.latency.${preset}.p50`, label: `POST /v1/query evidence, ${preset}, one client: p50`, value: round(client.p50), unit: 'ms', baseline: { label: 'retrieval alone (operation.retrievalMs) p50', value: round(retrieval.p50), kind: 'floor' }, ratio: round(client.p50 / retrieval.p50) },
        { id: `recall.latency.${preset}.p95`, label: `POST /v1/query evidence, ${preset}, one client: p95`, value: round(client.p95), unit: 'ms', baseline: { label: 'retrieval alone p95', value: round(retrieval.p95), kind: 'floor' }, ratio: round(client.p95 / retrieval.p95) },
      );
    }
    const answerF1 = round(pooled('f1'));
    const ceilingF1 = round(pooled('ceiling'));
    metrics.push(
      {
        id: 'recall.answer.f1', label: 'Built-in answerer (answer mode, accuracy), categories 1-4: token F1', value: answerF1, unit: '%',
        target: { op: '>=', value: round(0.7 * ceilingF1), text: '≥ 0.7 × the best single evidence sentence' },
        baseline: { label: 'best single sentence of the same evidence (ceiling)', value: ceilingF1, kind: 'floor' }, ratio: round(answerF1 / Math.max(ceilingF1, 1e-9)),
      },
      { id: 'recall.answer.em', label: 'Built-in answerer, categories 1-4: exact match', value: round(pooled('em')), unit: '%' },
      { id: 'recall.answer.answered', label: 'Built-in answerer, categories 1-4: questions answered (not insufficient_evidence)', value: round(pooled('answered')), unit: '%' },
    );
    const categories = [...scores.get('bm25')!.byCategory.keys()].sort();
    const byCategory = (k: number): Table => ({
      title: `Recall@${k} by question category (%)`,
      columns: ['category', 'questions', 'plain BM25', ...systems.map((s) => s.id)],
      rows: categories.map((cat) => [
        `${cat} ${CATEGORIES[cat] ?? ''}`.trim(),
        scores.get('bm25')!.byCategory.get(cat)![k]!.length,
        ...['bm25', ...systems.map((s) => s.id)].map((id) => round(mean(scores.get(id)!.byCategory.get(cat)![k]!))),
      ]),
    });
    const overall: Table = {
      title: 'Recall@k overall (%)',
      columns: ['system', ...KS.map((k) => `R@${k}`)],
      rows: ['bm25', ...systems.map((s) => s.id)].map((id) => [id === 'bm25' ? 'plain BM25 (floor)' : id, ...KS.map((k) => r(id, k))]),
    };
    return {
      settings: {
        file: process.env.LOCOMO_FILE ?? DEFAULT_LOCOMO_FILE.replace(/^.*\/shared\//, '../shared/'),
        conversations: conversations.length, turns: conversations.reduce((a, c) => a + c.turns.length, 0),
        'questions with evidence': questions, 'claims derived (infer true)': Number(derived!.claims), 'evidence per query': LIMIT,
      },
      metrics,
      tables: [overall, byCategory(10), byCategory(5), {
        title: 'Built-in answerer by category (answer mode, accuracy; token F1, exact match and answered in %; the ceiling is the F1 of the best single evidence sentence)',
        columns: ['category', 'questions', 'F1', 'exact match', 'answered', 'ceiling F1', 'F1 / ceiling'],
        rows: [...answers.entries()].sort((a, b) => a[0] - b[0]).map(([cat, a]) => [
          `${cat} ${CATEGORIES[cat] ?? ''}`.trim(), a.f1.length, round(mean(a.f1)), round(mean(a.em)), round(mean(a.answered)), round(mean(a.ceiling)),
          round(mean(a.f1) / Math.max(mean(a.ceiling), 1e-9)),
        ]),
      }, {
        title: 'Ablation: retrieval in-process over the same accounts (infer true), one feature of the accuracy plan left out at a time (%)',
        columns: ['plan', ...KS.map((k) => `R@${k}`)],
        rows: [['plain BM25 (floor)', ...KS.map((k) => floorAt(k))], ...[...ablation.entries()].map(([name, sc]) => [name, ...KS.map((k) => round(mean(sc.recall[k]!)))])],
      }],
      runs: Object.fromEntries([...scores.entries()].map(([id, s]) => [id, Object.fromEntries(KS.map((k) => [`r${k}`, round(mean(s.recall[k]!))]))])),
      notes: [
        'Tune on the development half only: a separate set of conversations decides acceptance, and nothing in the service knows this data.',
        'Evidence of sources would count for nothing here; these accounts hold memory only.',
      ],
    };
  },
};
