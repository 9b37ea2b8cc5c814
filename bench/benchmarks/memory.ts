import { randomUUID } from 'node:crypto';
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { startBenchApi } from '../lib/api.ts';
import type { Benchmark, BenchContext, BenchOutput } from '../lib/benchmark.ts';
import { closedLoop, type Warmup } from '../lib/closed-loop.ts';
import { childPid, treeCpuMs } from '../lib/machine.ts';
import { waitForBackgroundWork } from '../lib/drain.ts';
import type { Metric } from '../lib/results.ts';
import { round, summarize } from '../lib/stats.ts';
import { spawnBenchWorker } from '../lib/worker-process.ts';

// Issue acceptance for native memory: message-write receipt latency at 16 concurrent writers, the time
// from a write to its event `succeeded`, and writes per second sustained for a minute with one worker,
// with every event accounted for at the end.

const WRITERS = 16;
/**
 * Writes at 16 writers before the receipt phase is measured (not measured): as for the query
 * benchmark, enough for V8 to finish optimizing the hot code, which 160 were not.
 */
const WARMUP_WRITES = 600;
const SENTENCES = [
  'My favourite mountain is Mount %.',
  'I live in %, near the river.',
  'I work at % as an engineer.',
  'I have a dog named %.',
  'Thanks, that helps a lot!',
  'I am flying to % next Friday for a conference.',
];

export const memory: Benchmark = {
  name: 'memory',
  title: 'Native memory writes: receipt latency, write-to-succeeded, sustained writes/s (one worker)',
  description:
    'The real API over HTTP and one worker (bin/worker.ts as a separate process) on the real Temporal dev ' +
    'server and PostgreSQL. Each write is one user message (a realistic sentence, half of which yield a ' +
    'claim) to one of 64 peers. Receipt latency: 16 concurrent writers, time from sending ' +
    'POST .../messages to its 200 receipt, after 600 unmeasured writes at 16 writers by the same load ' +
    'generator (connections opened, statements prepared, the generator compiled) and the background work ' +
    'they made drained. Write-to-succeeded: one writer at a time, from sending the ' +
    'write until the event row is `succeeded` (polled in PostgreSQL every 2 ms). Sustained: 16 writers ' +
    'for 60 s; writes/s is the number of writes accepted in the window divided by the time until the last ' +
    'of their events finished; afterwards every event must be `succeeded` (none queued, running or failed).',

  async run(ctx: BenchContext): Promise<BenchOutput> {
    const sustainSeconds = ctx.quick ? 10 : Number(process.env.BENCH_MEMORY_SUSTAIN_SECONDS ?? 60);
    const receiptWrites = ctx.quick ? 160 : 4000;
    const latencySamples = ctx.quick ? 20 : 100;
    const { orm, databaseUrl, temporalAddress, taskQueue } = await ctx.infra.backend('memory');
    const api = await startBenchApi(ctx.infra, { orm, temporalAddress, env: { TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_PER_MINUTE: '1000000' } });
    const account = await createAccount(orm.em.fork(), api.config.accountDefaults, { email: `bench-${randomUUID()}@cairn.local`, password: 'benchmark password, long' });
    const { secret } = await createApiKey(orm.em.fork(), account.id, { name: 'bench', scopes: ['memory.read', 'memory.write'], maxPreset: 'accuracy' });
    const headers = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
    const post = async (url: string, body: string) => {
      const res = await fetch(url, { method: 'POST', headers, body });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`POST ${url} answered ${res.status}: ${text}`);
      return JSON.parse(text) as { event_id: string };
    };
    const base = `${api.baseUrl}/v1/workspaces/default`;
    const peers = Array.from({ length: 64 }, (_, i) => `peer-${i}`);
    for (const p of peers) {
      await post(`${base}/peers`, JSON.stringify({ id: p }));
      await post(`${base}/sessions`, JSON.stringify({ id: `session-${p}` }));
    }
    // The i-th write: one user message to one of the peers, in its own session.
    const writeRequest = (i: number) => {
      const peer = peers[i % peers.length]!;
      const content = SENTENCES[i % SENTENCES.length]!.replace('%', `Place${i}`);
      return { url: `${base}/sessions/session-${peer}/messages`, body: JSON.stringify({ peer_id: peer, messages: [{ role: 'user', content }] }) };
    };
    let n = 0;
    const write = () => {
      const { url, body } = writeRequest(n++);
      return post(url, body);
    };
    // Concurrent writers run in a worker thread (closed loop), so the load generator does not share the
    // in-process API's event loop; each of its requests is a distinct message to one of the peers.
    const writers = (maxRequests: number, durationSeconds: number, warmup?: Warmup) => closedLoop({
      headers, requests: Array.from({ length: 4096 }, (_, i) => writeRequest(n + i)), connections: WRITERS, durationSeconds, maxRequests,
      ...(warmup ? { warmup } : {}),
    }).then((sample) => {
      if (sample.errors) throw new Error(`${sample.errors} writes failed, first: ${sample.firstError}`);
      n += sample.warmedUp + sample.latenciesMs.length;
      return sample;
    });
    const conn = () => orm.em.fork().getConnection();

    const worker = spawnBenchWorker(ctx.infra, { databaseUrl, temporalAddress, taskQueue });
    // Where the machine time goes: the API's main thread, and PostgreSQL, the Temporal server and the
    // worker as process trees (absent ones, e.g. an external DATABASE_URL, count 0).
    const trees = { postgres: await childPid('postgres'), temporal: await childPid('temporal'), worker: worker.pid };
    await sleep(ctx.quick ? 4000 : 6000); // workflow bundling at worker start is not measured
    // Warm-up: connections, JIT, the workflow cache; draining it also waits for the worker to be polling.
    for (let i = 0; i < 30; i++) await write();
    await waitForBackgroundWork(orm, 300_000, 20);

    // 1. Write to succeeded, one write at a time.
    const toSucceeded: number[] = [];
    for (let i = 0; i < latencySamples; i++) {
      const t = performance.now();
      const { event_id } = await write();
      for (;;) {
        const [row] = await conn().execute<{ status: string }[]>('select status from memory_event where id = ?', [event_id]);
        if (row!.status === 'succeeded') break;
        if (row!.status === 'failed') throw new Error(`event ${event_id} failed`);
        await sleep(2);
      }
      toSucceeded.push(performance.now() - t);
    }
    const succ = summarize(toSucceeded);
    ctx.log(`write to succeeded: p50 ${succ.p50.toFixed(1)} ms, p95 ${succ.p95.toFixed(1)} ms`);

    // 2. Receipt latency at 16 concurrent writers, and where the machine time went meanwhile (the API's
    // main thread; PostgreSQL, the Temporal server and the worker as child processes).
    // Warm-up at 16 writers first, by the same load generator, as the query benchmark warms each case:
    // the pool opens its other connections (authentication, then each prepared statement planned once
    // per connection), the worker's batch workflows start and the generator's HTTP client is compiled;
    // a service under load has done that already. The background work it made is drained before the
    // measured writes start.
    let apiCpu0 = process.threadCpuUsage();
    let children0 = await treeCpuMs(trees);
    const receiptSample = await writers(receiptWrites, 600, {
      requests: WARMUP_WRITES,
      then: async () => {
        await waitForBackgroundWork(orm, 300_000, 20);
        apiCpu0 = process.threadCpuUsage();
        children0 = await treeCpuMs(trees);
      },
    });
    const apiCpuMs = (({ user, system }) => (user + system) / 1000)(process.threadCpuUsage(apiCpu0));
    const children1 = await treeCpuMs(trees);
    await waitForBackgroundWork(orm, 300_000, 20);
    const rec = summarize(receiptSample.latenciesMs);
    const perWrite = (name: keyof typeof trees) => (children1[name] - children0[name]) / receiptSample.latenciesMs.length;
    const machine = { api: apiCpuMs / receiptSample.latenciesMs.length, postgres: perWrite('postgres'), temporal: perWrite('temporal'), worker: perWrite('worker') };
    const machineTotal = machine.api + machine.postgres + machine.temporal + machine.worker;
    // Little's law: 16 closed-loop writers on 2 cores cannot wait less, on average, than 16 × the machine
    // time each write costs ÷ 2 cores, whatever the code does while the machine is saturated.
    const cores = os.availableParallelism();
    const floorMs = (WRITERS * machineTotal) / cores;
    ctx.log(`receipt at ${WRITERS} writers: p50 ${rec.p50.toFixed(1)} ms, p95 ${rec.p95.toFixed(1)} ms; machine ms per write ${JSON.stringify(machine)}`);

    // 3. Sustained: 16 writers for the window, then until every event finished.
    const t0 = performance.now();
    const sustained0 = await treeCpuMs(trees);
    const sustained = await writers(Number.MAX_SAFE_INTEGER, sustainSeconds);
    const accepted = sustained.latenciesMs.length;
    const acceptedSeconds = (performance.now() - t0) / 1000;
    await waitForBackgroundWork(orm, 600_000, 20);
    const finishedSeconds = (performance.now() - t0) / 1000;
    // The background side of a write (dispatch, batch workflow, derivation): machine time per accepted
    // write until all succeeded, which the other load on a shared machine does not change much.
    const sustained1 = await treeCpuMs(trees);
    const sustainedMachine = { postgres: (sustained1.postgres - sustained0.postgres) / accepted, temporal: (sustained1.temporal - sustained0.temporal) / accepted, worker: (sustained1.worker - sustained0.worker) / accepted };
    const statuses = await conn().execute<{ status: string; n: string }[]>('select status, count(*) as n from memory_event group by status');
    const byStatus = Object.fromEntries(statuses.map((s) => [s.status, Number(s.n)]));
    const notSucceeded = statuses.filter((s) => s.status !== 'succeeded').reduce((a, s) => a + Number(s.n), 0);
    const [claims] = await conn().execute<{ n: string }[]>('select count(*) as n from memory_claim');
    const [batches] = await conn().execute<{ n: string; events: string }[]>('select count(distinct batch_id) as n, count(*) as events from memory_event where batch_id is not null');
    const sus = summarize(sustained.latenciesMs);
    ctx.log(`batches: ${batches!.n} for ${batches!.events} events`);
    ctx.log(`sustained: ${accepted} writes accepted in ${acceptedSeconds.toFixed(1)} s (receipt p50 ${sus.p50.toFixed(1)} ms), all finished after ${finishedSeconds.toFixed(1)} s`);

    const floor = { label: `${WRITERS} × machine time per write ÷ ${cores} cores`, value: round(floorMs), kind: 'floor' as const };
    const ms = (id: string, label: string, value: number, target?: number, baseline?: typeof floor): Metric => ({
      id, label, value: round(value), unit: 'ms',
      ...(target ? { target: { op: '<', value: target, text: `< ${target} ms` } } : {}),
      ...(baseline ? { baseline, ratio: round(value / baseline.value) } : target ? { ratio: round(value / target) } : {}),
    });
    const cpu = (id: string, label: string, value: number, phase = 'during the receipt phase'): Metric => ({ id: `memory.machine.${id}`, label: `Machine time per write ${phase}: ${label}`, value: round(value), unit: 'ms' });
    const sustainedPhase = 'in the sustained phase, until all succeeded';
    return {
      settings: { writers: WRITERS, 'receipt writes': receiptWrites, 'latency samples': latencySamples, 'sustained seconds': sustainSeconds, workers: 1, peers: peers.length },
      metrics: [
        ms('memory.receipt.p50', `Message-write receipt latency, p50 at ${WRITERS} concurrent writers`, rec.p50, undefined, floor),
        ms('memory.receipt.p95', `Message-write receipt latency, p95 at ${WRITERS} concurrent writers`, rec.p95, 30, floor),
        cpu('api', 'API process (main thread)', machine.api),
        // An external DATABASE_URL's server is not a child of this process: its time is not measured.
        ...(trees.postgres ? [cpu('postgres', 'PostgreSQL', machine.postgres)] : []),
        cpu('temporal', 'Temporal server', machine.temporal),
        cpu('worker', 'worker process', machine.worker),
        cpu('total', 'all of these', machineTotal),
        ms('memory.succeeded.p50', 'Write to event succeeded, p50 (one write at a time)', succ.p50, 300),
        ms('memory.succeeded.p95', 'Write to event succeeded, p95 (one write at a time)', succ.p95),
        { id: 'memory.sustained.writesPerSecond', label: `Writes per second sustained for ${sustainSeconds} s with one worker (accepted writes / time until all succeeded)`, value: round(accepted / finishedSeconds), unit: 'writes/s' },
        ...(trees.postgres ? [cpu('sustained.postgres', 'PostgreSQL', sustainedMachine.postgres, sustainedPhase)] : []),
        cpu('sustained.temporal', 'Temporal server', sustainedMachine.temporal, sustainedPhase),
        cpu('sustained.worker', 'worker process', sustainedMachine.worker, sustainedPhase),
        { id: 'memory.sustained.acceptedPerSecond', label: `Writes per second accepted by the API in the ${sustainSeconds} s window`, value: round(accepted / acceptedSeconds), unit: 'writes/s' },
        { id: 'memory.unfinished', label: 'Events not succeeded at the end (queued, running, failed, quarantined)', value: notSucceeded, unit: 'events', target: { op: '<', value: 1, text: '0' } },
      ],
      runs: { machineMsPerWrite: machine, receiptMs: { ...rec }, toSucceededMs: { ...succ }, sustainedReceiptMs: { ...sus }, eventsByStatus: byStatus, claims: Number(claims!.n), accepted,
        batches: Number(batches!.n), eventsPerBatch: round(Number(batches!.events) / Math.max(1, Number(batches!.n))) },
      notes: [
        'Receipts include authentication, the rate limiter, validation and the write (event and messages in one SQL statement; the workers are notified after its commit); the API makes no Temporal call. The worker\'s dispatcher claims queued events in batches and starts one workflow per batch, and the worker derives the claims, all on the same 2 cores meanwhile.',
        'Floor: with 16 writers in a closed loop the machine is saturated, so by Little\'s law the mean receipt latency is at least 16 × (machine time per write) ÷ cores; the machine-time rows say which process spends it (CPU time from /proc for PostgreSQL, the Temporal server and the worker; the API\'s main thread from process.threadCpuUsage). The load generator runs in a worker thread and is not counted.',
        'Priorities as under npm start: the worker runs at BACKGROUND_NICE (10), so receipts come first while the cores are contended; the writes accepted in the sustained window are finished after it, and the sustained row counts until the last of them succeeded (docs/decisions/0015-task-queues-and-fairness.md).',
        'Batches: with at most 2 batches of a dispatcher running, the events written meanwhile gather into the next one (up to 100), so the Temporal cost per write falls as the load rises; the runs record the batch count and size.',
      ],
    };
  },
};
