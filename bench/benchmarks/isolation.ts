import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import type { Scope } from '../../core/contracts/account.ts';
import { flateBombPdf, keyPathBomb, nestedDivs } from '../../test/helpers/hostile-files.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import type { Metric } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { spawnBenchWorker } from '../lib/worker-process.ts';

// Issue 24's acceptance as numbers: account B's latencies while account A submits pathological HTML,
// Flate-bomb PDFs and a flood of dry runs, against the same work of B with A idle.

type Phase = { memoryMs: number[]; ingestMs: number[]; readyzMs: number[]; a: Record<string, number> };

// The heavy mode (`isolation-heavy`, issue 39): A's live files are slow but legal ones of every kind,
// each kind in its own loop (so eight of A's jobs are in flight at once), all generated here.

function heavyFiles(): [Buffer, string][] {
  const words = 'the keeper logged a storm near the harbour while terns nested on the island'.split(' ');
  const line = (bytes: number) => Buffer.from(Array.from({ length: Math.ceil(bytes / 6) }, (_, i) => words[i % words.length]).join(' ').slice(0, bytes));
  const links = Buffer.from(`<html><body>${Array.from({ length: 100_000 }, (_, i) => `<a href="https://example.com/p/${i}">page ${i}</a>`).join(' ')}</body></html>`);
  // Sentence splitting's edge cases: abbreviations, decimals, ellipses and quotes, 9 MB of them.
  const edges = Buffer.from('Dr. A. B. Smith paid $3.50 at 10 a.m. ... "Really?!" she said. e.g. U.S.A. v. 2.0 (see p. 4). '.repeat(95_000));
  const markdown = Buffer.from(`${'> '.repeat(2000)}${'*'.repeat(20_000)}
${'- [x](y '.repeat(30_000)}
${'|a'.repeat(50_000)}
`);
  return [
    [line(48_000_000), 'text/plain'], [links, 'text/html'], [edges, 'text/plain'], [keyPathBomb(), 'application/json'],
    [markdown, 'text/markdown'], [nestedDivs(130_000), 'text/html'], [flateBombPdf(256), 'application/pdf'], [line(10_000_000), 'text/plain'],
  ];
}

const isolationBench = (HEAVY: boolean): Benchmark => ({
  name: HEAVY ? 'isolation-heavy' : 'isolation',
  title: HEAVY ? 'Tenant isolation, heavy: one account\'s latencies while another keeps eight slow files in flight'
    : 'Tenant isolation: one account\'s latencies while another submits hostile work',
  description:
    'The real API over HTTP and one worker (bin/worker.ts as a separate process) on the real Temporal dev ' +
    'server and PostgreSQL, at the default limits. Account B, in two sequential loops, writes one memory ' +
    'message and waits for its event to be `succeeded` (polled in PostgreSQL every 5 ms), and submits a ' +
    '1 KB Markdown file live and waits for its job to be `succeeded`; a third loop calls `/readyz` every ' +
    '100 ms. The phase is run twice for the same time: with account A idle, and with A submitting, one ' +
    'after another, live 2.2 MB HTML files of 130,000 nested <div>s and PDFs whose one content stream ' +
    'inflates to 256 MiB, while 8 clients of A send dry runs of the nested HTML without pause (a 429 is ' +
    'retried after its retry-after). Latencies are from sending the request to the observed state. ' +
    'The heavy mode (isolation-heavy): A instead keeps eight kinds of slow but legal files in flight (48 MB and 10 MB ' +
    'single-line texts, 100k-link HTML, 9 MB of sentence edge cases, key-path JSON, pathological Markdown, the nested ' +
    'HTML and the PDF), each in its own loop; B\'s p95 is then compared with its own with A idle.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const seconds = ctx.quick ? 15 : Number(process.env.BENCH_ISOLATION_SECONDS ?? 60);
    const { orm, databaseUrl, temporalAddress, taskQueue } = await ctx.infra.backend('isolation');
    const api = await startBenchApi(ctx.infra, {
      orm, temporalAddress,
      env: { TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_PER_MINUTE: '1000000', DEFAULT_INGEST_DAILY_LIMIT: '100000', DEFAULT_INGEST_MONTHLY_LIMIT: '100000' },
    });
    spawnBenchWorker(ctx.infra, { databaseUrl, temporalAddress, taskQueue });
    const keyOf = async (scopes: Scope[]) => {
      const account = await createAccount(orm.em.fork(), api.config.accountDefaults, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
      const { secret } = await createApiKey(orm.em.fork(), account.id, { name: 'bench', scopes, maxPreset: 'accuracy' });
      return { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    };
    const a = await keyOf(['ingest']);
    const b = await keyOf(['ingest', 'memory.read', 'memory.write']);
    const post = (auth: Record<string, string>, path: string, body: unknown) =>
      fetch(`${api.baseUrl}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
    await post(b, '/v1/workspaces/default/peers', { id: 'bea' });
    await post(b, '/v1/workspaces/default/sessions', { id: 'chat' });
    const sql = <T>(text: string, params: unknown[]) => orm.em.fork().getConnection().execute<T[]>(text, params);
    const until = async (text: string, id: string, done: (status: string) => boolean) => {
      for (;;) {
        const [row] = await sql<{ status: string }>(text, [id]);
        if (row && done(row.status)) return row.status;
        await sleep(5);
      }
    };
    const file = (filename: string, contentType: string, bytes: Buffer, live: boolean) => ({
      filename, contentType, contentBase64: bytes.toString('base64'),
      ...(live ? { dryRun: false, datedAt: '2026-11-24', idempotencyKey: `bench-${randomUUID()}` } : {}),
    });
    const note = Buffer.from(`# Note\n\n${'The Kestrel launch moved to March 2027 after the review. '.repeat(17)}\n`.slice(0, 1024));
    const html = nestedDivs(130_000);
    const aFiles: (readonly [Buffer, string])[] = HEAVY ? heavyFiles() : [[html, 'text/html'], [flateBombPdf(256), 'application/pdf']];
    const aJobs: string[] = [];

    const phase = async (hostile: boolean): Promise<Phase> => {
      const out: Phase = { memoryMs: [], ingestMs: [], readyzMs: [], a: { jobsFailed: 0, jobsSucceeded: 0, dryRuns: 0, dryRunsRefused429: 0, answers5xx: 0 } };
      let b5xx = 0;
      const end = Date.now() + seconds * 1000;
      const loops: Promise<void>[] = [];
      const loop = (body: () => Promise<void>) => loops.push((async () => {
        while (Date.now() < end) await body();
      })());
      loop(async () => {
        const t = performance.now();
        const res = await post(b, '/v1/workspaces/default/sessions/chat/messages', { peer_id: 'bea', messages: [{ role: 'user', content: `I live in Orlavik ${randomUUID().slice(0, 8)}.` }] });
        if (res.status >= 500) b5xx++;
        const { event_id: id } = (await res.json()) as { event_id: string };
        await until('select status from memory_event where id = ?', id, (s) => s === 'succeeded' || s === 'failed');
        out.memoryMs.push(performance.now() - t);
        await sleep(250);
      });
      loop(async () => {
        const t = performance.now();
        const res = await post(b, '/v1/ingest/file', file('note.md', 'text/markdown', note, true));
        if (res.status >= 500) b5xx++;
        const { job } = (await res.json()) as { job: { id: string } };
        await until('select status from ingest_job where id = ?', job.id, (s) => s !== 'queued' && s !== 'running');
        out.ingestMs.push(performance.now() - t);
        await sleep(500);
      });
      loop(async () => {
        const t = performance.now();
        await fetch(`${api.baseUrl}/readyz`).then((r) => r.arrayBuffer());
        out.readyzMs.push(performance.now() - t);
        await sleep(100);
      });
      if (hostile) {
        for (const bytes of aFiles) {
          loop(async () => {
            const res = await post(a, '/v1/ingest/file', file('hostile', bytes[1], bytes[0], true));
            if (res.status >= 500) out.a.answers5xx!++;
            const { job } = (await res.json()) as { job: { id: string } };
            aJobs.push(job.id);
            const status = await until('select status from ingest_job where id = ?', job.id, (s) => s !== 'queued' && s !== 'running');
            out.a[status === 'failed' ? 'jobsFailed' : 'jobsSucceeded']!++;
          });
        }
        for (let i = 0; i < 8; i++) {
          loop(async () => {
            const res = await post(a, '/v1/ingest/file', file('nested.html', 'text/html', html, false));
            await res.arrayBuffer();
            out.a.dryRuns!++;
            if (res.status >= 500) out.a.answers5xx!++;
            if (res.status === 429) {
              out.a.dryRunsRefused429!++;
              await sleep(Number(res.headers.get('retry-after') ?? 1) * 1000);
            }
          });
        }
      }
      await Promise.all(loops);
      out.a.b5xx = b5xx;
      return out;
    };

    // Warm-up: the worker's bundle, the extraction processes, the first statements.
    await phase(false).catch(() => undefined);
    const idle = await phase(false);
    ctx.log(`A idle: ${idle.memoryMs.length} memory writes, ${idle.ingestMs.length} ingests, ${idle.readyzMs.length} readiness checks`);
    const hostile = await phase(true);
    const [attempts] = aJobs.length
      ? await sql<{ most: number | null }>(`select max(attempts) as most from ingest_job where id in (${aJobs.map(() => '?').join(', ')})`, aJobs)
      : [];
    hostile.a.mostAttempts = Number(attempts?.most ?? 0);
    ctx.log(`A hostile: ${hostile.memoryMs.length} memory writes, ${hostile.ingestMs.length} ingests, ${hostile.readyzMs.length} readiness checks; A: ${JSON.stringify(hostile.a)}`);

    const pair = (id: string, label: string, pick: (p: Phase) => number[], stat: 'p50' | 'p95' | 'p99' | 'max', target?: number): Metric => {
      const value = round(summarize(pick(hostile))[stat]);
      const base = round(summarize(pick(idle))[stat]);
      return {
        id, label: `${label} ${stat}, A hostile (baseline: A idle)`, value, unit: 'ms',
        ...(target ? { target: { op: '<' as const, value: target, text: `< ${target >= 1000 ? `${target / 1000} s` : `${target} ms`}` } } : {}),
        baseline: { label: 'A idle', value: base, kind: 'baseline' }, ratio: round(value / base),
      };
    };
    const metrics: Metric[] = [
      pair('isolation.memory.p50', 'B memory write → succeeded', (p) => p.memoryMs, 'p50'),
      pair('isolation.memory.p95', 'B memory write → succeeded', (p) => p.memoryMs, 'p95', 2000),
      pair('isolation.ingest.p50', 'B 1 KB ingest → succeeded', (p) => p.ingestMs, 'p50'),
      pair('isolation.ingest.p95', 'B 1 KB ingest → succeeded', (p) => p.ingestMs, 'p95', 5000),
      pair('isolation.readyz.p50', '/readyz', (p) => p.readyzMs, 'p50'),
      pair('isolation.readyz.p99', '/readyz', (p) => p.readyzMs, 'p99', 250),
      pair('isolation.ingest.max', 'B 1 KB ingest → succeeded', (p) => p.ingestMs, 'max'),
    ];
    if (HEAVY) {
      // Issue 39's targets for the heavy mode: ratios to B's own figures with A idle, in the same run.
      const ratio = (pick: (p: Phase) => number[]) => round(summarize(pick(hostile)).p95 / summarize(pick(idle)).p95);
      metrics.push(
        { id: 'isolation.heavy.ingest.ratio', label: 'B 1 KB ingest p95, A heavy / A idle', value: ratio((p) => p.ingestMs), unit: '×', target: { op: '<=', value: 3, text: '≤ 3×' } },
        { id: 'isolation.heavy.memory.ratio', label: 'B memory write p95, A heavy / A idle', value: ratio((p) => p.memoryMs), unit: '×', target: { op: '<=', value: 2, text: '≤ 2×' } },
      );
    }
    return {
      settings: {
        'seconds per phase': seconds, 'A dry-run clients': 8, mode: HEAVY ? 'heavy' : 'hostile',
        'A live files': HEAVY
          ? 'one loop each: 48 MB and 10 MB single-line texts, 100k-link HTML, 9 MB of sentence edge cases, key-path JSON, pathological Markdown, nested-div HTML, Flate-bomb PDF'
          : 'nested-div HTML (2.2 MB), Flate-bomb PDF (256 MiB inflated)',
      },
      metrics,
      notes: [
        `With A hostile: B made ${hostile.memoryMs.length} memory writes and ${hostile.ingestMs.length} ingests; ` +
          `A's live jobs ${hostile.a.jobsFailed} failed and ${hostile.a.jobsSucceeded} succeeded, ${hostile.a.dryRuns} dry runs of which ` +
          `${hostile.a.dryRunsRefused429} were refused with 429 (free work per account), ${hostile.a.answers5xx} of A's answers and ${hostile.a.b5xx} of B's were 5xx; ` +
          `A's jobs took at most ${hostile.a.mostAttempts} attempt(s).`,
      ],
      runs: {
        idle: { memory: summarize(idle.memoryMs), ingest: summarize(idle.ingestMs), readyz: summarize(idle.readyzMs) },
        hostile: { memory: summarize(hostile.memoryMs), ingest: summarize(hostile.ingestMs), readyz: summarize(hostile.readyzMs), a: hostile.a },
      },
    };
  },
});

export const isolation = isolationBench(false);
export const isolationHeavy = isolationBench(true);
