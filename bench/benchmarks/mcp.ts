import { randomUUID } from 'node:crypto';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { closedLoop } from '../lib/closed-loop.ts';
import type { Metric } from '../lib/results.ts';
import { median, round, summarize } from '../lib/stats.ts';
import { spawnBenchWorker } from '../lib/worker-process.ts';

// Issue 8 acceptance: tools/call latency of query_context and add_messages_to_session on the hosted MCP
// endpoint next to the equivalent REST calls, same server, same account, same load. Target: within 1.5×.

const CONNECTIONS = 8;

export const mcp: Benchmark = {
  name: 'mcp',
  title: 'MCP tools/call latency next to the equivalent REST calls',
  description:
    'One API process serving REST and the MCP endpoint under /mcp (stateless Streamable HTTP, JSON ' +
    'responses), one worker process, the real Temporal dev server and PostgreSQL, an account with a ' +
    'handful of ingested documents and recorded conversations. A closed-loop generator in a worker ' +
    `thread keeps ${CONNECTIONS} requests in flight: POST /v1/query (context mode, accuracy preset, a new ` +
    'idempotency key each) against tools/call query_context with the same arguments, and POST ' +
    '.../sessions/{s}/messages against tools/call add_messages_to_session with the same message. REST and ' +
    'MCP alternate run by run so drift affects both; medians of the runs. A tool error counts as an error.',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const runs = ctx.quick ? 1 : 3;
    const seconds = ctx.quick ? 3 : 8;
    const { orm, databaseUrl, temporalAddress, taskQueue } = await ctx.infra.backend('mcp');
    const big = '100000000';
    const api = await startBenchApi(ctx.infra, {
      orm, temporalAddress, mcp: true,
      env: { TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_PER_MINUTE: '1000000', DEFAULT_MONTHLY_CREDITS: big, DEFAULT_QUERY_DAILY_LIMIT: big, DEFAULT_QUERY_MONTHLY_LIMIT: big },
    });
    spawnBenchWorker(ctx.infra, { databaseUrl, temporalAddress, taskQueue });
    const account = await createAccount(orm.em.fork(), api.config.accountDefaults, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
    const { secret } = await createApiKey(orm.em.fork(), account.id, { name: 'bench', scopes: ['ingest', 'query', 'memory.read', 'memory.write'], maxPreset: 'accuracy' });
    const auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const post = async (path: string, body: unknown) => {
      const res = await fetch(`${api.baseUrl}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      if (res.status >= 300) throw new Error(`${path} answered ${res.status}: ${await res.text()}`);
      return res.json() as Promise<Record<string, unknown>>;
    };
    // A small corpus and a conversation, so both paths retrieve real evidence.
    const jobs: string[] = [];
    for (let i = 0; i < 10; i++) {
      const text = `# Station Vega ${i}\n\nStation Vega recorded ${i * 7} storms in ${1950 + i}. The keeper was Ines Morales. Project Kestrel was founded in Orlavik.\n`;
      const r = await post('/v1/ingest/file', { filename: `v${i}.md`, contentType: 'text/markdown', contentBase64: Buffer.from(text).toString('base64'), dryRun: false, datedAt: '2026-11-01', idempotencyKey: `corpus-${i}-${randomUUID()}` });
      jobs.push((r.job as { id: string }).id);
    }
    await post('/v1/workspaces/default/peers', { id: 'dana' });
    await post('/v1/workspaces/default/sessions', { id: 'chat' });
    const deadline = Date.now() + 120_000;
    for (;;) {
      const [row] = await orm.em.fork().getConnection().execute<{ n: string }[]>(`select count(*) as n from ingest_job where status <> 'succeeded' and id in (?)`, [jobs]);
      if (Number(row!.n) === 0) break;
      if (Date.now() > deadline) throw new Error('corpus ingest did not finish');
      await new Promise((r) => setTimeout(r, 200));
    }

    const question = 'Who was the keeper of station Vega and how many storms were recorded?';
    const message = { role: 'user', content: 'I moved to Lisbon in 2019 and I prefer green tea. {{uuid}}' };
    const mcpHeaders = { ...auth, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
    const rpc = (name: string, args: unknown) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } });
    const pairs = [
      {
        name: 'query (context)',
        rest: { headers: auth, requests: [{ url: `${api.baseUrl}/v1/query`, body: JSON.stringify({ idempotencyKey: 'bench-{{uuid}}', mode: 'context', query: question, preset: 'accuracy' }) }] },
        mcp: { headers: mcpHeaders, errorMarker: '"isError":true',
          requests: [{ url: `${api.baseUrl}/mcp`, body: rpc('query_context', { idempotencyKey: 'bench-{{uuid}}', mode: 'context', query: question, preset: 'accuracy' }) }] },
      },
      {
        name: 'add messages',
        rest: { headers: auth, requests: [{ url: `${api.baseUrl}/v1/workspaces/default/sessions/chat/messages`, body: JSON.stringify({ peer_id: 'dana', messages: [message] }) }] },
        mcp: { headers: mcpHeaders, errorMarker: '"isError":true',
          requests: [{ url: `${api.baseUrl}/mcp`, body: rpc('add_messages_to_session', { session_id: 'chat', peer_id: 'dana', messages: [message] }) }] },
      },
    ];

    const metrics: Metric[] = [];
    const rows: (string | number)[][] = [];
    const perRun: Record<string, unknown> = {};
    for (const pair of pairs) {
      const measured = { rest: { p50: [] as number[], p95: [] as number[], rps: [] as number[] }, mcp: { p50: [] as number[], p95: [] as number[], rps: [] as number[] } };
      for (let run = 0; run < runs; run++) {
        for (const side of ['rest', 'mcp'] as const) {
          const s = await closedLoop({ ...pair[side], connections: CONNECTIONS, durationSeconds: seconds, maxRequests: 100_000 });
          if (s.errors > 0 || s.latenciesMs.length === 0) throw new Error(`${pair.name} ${side}: ${s.errors} errors, first: ${s.firstError}`);
          const sum = summarize(s.latenciesMs);
          measured[side].p50.push(sum.p50);
          measured[side].p95.push(sum.p95);
          measured[side].rps.push(s.latenciesMs.length / s.durationSeconds);
          ctx.log(`${pair.name} ${side} run ${run + 1}: p50 ${sum.p50.toFixed(1)} ms, p95 ${sum.p95.toFixed(1)} ms`);
        }
      }
      perRun[pair.name] = measured;
      const m = (side: 'rest' | 'mcp', f: 'p50' | 'p95' | 'rps') => round(median(measured[side][f]));
      const key = pair.name.startsWith('query') ? 'query' : 'messages';
      for (const f of ['p50', 'p95'] as const) {
        metrics.push({
          id: `mcp.${key}.${f}`, label: `tools/call ${key === 'query' ? 'query_context' : 'add_messages_to_session'} ${f} at ${CONNECTIONS} concurrent`,
          value: m('mcp', f), unit: 'ms', target: { op: '<', value: 1.5, text: '< 1.5× REST', of: 'ratio' },
          baseline: { label: `REST ${pair.rest.requests[0]!.url.replace(api.baseUrl, '')}`, value: m('rest', f), kind: 'baseline' }, ratio: round(m('mcp', f) / m('rest', f)),
        });
      }
      rows.push([pair.name, 'REST', m('rest', 'rps'), m('rest', 'p50'), m('rest', 'p95')], [pair.name, 'MCP tools/call', m('mcp', 'rps'), m('mcp', 'p50'), m('mcp', 'p95')]);
    }
    // The message writes leave a backlog of memory events (thousands); draining it would take minutes
    // and is not what this benchmark measures. Its worker is stopped when the benchmark ends, and the
    // database with the queued events is dropped.
    return {
      settings: { connections: CONNECTIONS, 'seconds per run': seconds, runs },
      metrics,
      tables: [{ title: 'Per path (medians of runs)', columns: ['Operation', 'Path', 'req/s', 'p50 ms', 'p95 ms'], rows }],
      runs: perRun,
      notes: [
        'The target is met when the ratio (MCP ÷ REST) is below 1.5; the ratio column shows it.',
        'Each MCP request is independent (stateless transport): the server builds a fresh MCP server and transport per request, which is part of what is measured.',
      ],
    };
  },
};
