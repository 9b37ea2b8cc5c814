// `npm run bench [-- <name>...] [--quick]`: runs the named benchmarks (all by default), prints their
// results and stores them in docs/benchmarks.json, regenerating docs/benchmarks.md. Results of
// benchmarks not run this time are kept. `--quick` runs everything once and briefly and writes nothing;
// `--render` runs nothing and only regenerates docs/benchmarks.md from docs/benchmarks.json.
import { benchmarks } from './benchmarks/index.ts';
import type { Benchmark } from './lib/benchmark.ts';
import { Infra, log } from './lib/infra.ts';
import { cpuIdlePercent, describeCode, describeMachine, startCpuAccounting } from './lib/machine.ts';
import { renderSection, saveResults, type BenchmarkResult } from './lib/results.ts';

function usage(): string {
  return [
    'usage: npm run bench [-- <name>...] [--quick | --render]',
    '',
    'benchmarks:',
    ...benchmarks.map((b) => `  ${b.name.padEnd(10)} ${b.title}`),
    '',
    '  --quick   one short run of each measurement, to check the harness; results are not written',
    '  --render  run nothing: regenerate docs/benchmarks.md from docs/benchmarks.json',
  ].join('\n');
}

async function main(): Promise<number> {
  const args = process.argv.slice(2);
  if (args.includes('--help') || args.includes('-h')) {
    process.stdout.write(`${usage()}\n`);
    return 0;
  }
  if (args.includes('--render')) {
    await saveResults([], benchmarks.map((b) => b.name));
    log('docs/benchmarks.md regenerated from docs/benchmarks.json');
    return 0;
  }
  const quick = args.includes('--quick');
  const names = args.filter((a) => !a.startsWith('-'));
  const unknownFlags = args.filter((a) => a.startsWith('-') && a !== '--quick');
  const unknown = names.filter((n) => !benchmarks.some((b) => b.name === n));
  if (unknown.length || unknownFlags.length) {
    process.stderr.write(`unknown benchmark or option: ${[...unknown, ...unknownFlags].join(', ')}\n\n${usage()}\n`);
    return 64; // EX_USAGE
  }
  const selected: Benchmark[] = names.length ? benchmarks.filter((b) => names.includes(b.name)) : benchmarks;
  const command = `npm run bench${args.length ? ` -- ${args.join(' ')}` : ''}`;

  const infra = new Infra();
  let interrupted = false;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    log(`${signal}: stopping`);
    // The running benchmark fails once its server and database are gone; exit as soon as all is stopped.
    void infra.stop().finally(() => process.exit(130));
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const results: BenchmarkResult[] = [];
  let failed = false;
  try {
    for (const b of selected) {
      if (interrupted) break;
      log(`${b.name}: ${b.title}`);
      const idle = await cpuIdlePercent();
      if (idle < 90) log(`warning: the CPU was only ${idle}% idle before ${b.name} started; other work will skew the numbers`);
      const started = performance.now();
      const startedAt = new Date();
      try {
        const cpu = await startCpuAccounting();
        const out = await b.run({ infra, quick, log: (m) => log(`${b.name}: ${m}`) });
        const others = await cpu.stop();
        if (others !== undefined && others > 5) {
          log(`warning: other processes used ${others}% of the CPU during ${b.name}; the numbers are skewed`);
        }
        const pg = await infra.postgres();
        const code = await describeCode();
        const result: BenchmarkResult = {
          name: b.name,
          title: b.title,
          description: b.description,
          command,
          date: startedAt.toISOString().replace(/\.\d+Z$/, 'Z'),
          tookSeconds: Math.round((performance.now() - started) / 1000),
          ...(code ? { code } : {}),
          machine: await describeMachine(pg.adminUrl, pg.source),
          idleBeforeStartPercent: idle,
          ...(others === undefined ? {} : { otherProcessesCpuPercent: others }),
          ...out,
        };
        results.push(result);
        process.stdout.write(`\n${renderSection(result)}\n\n`);
        // Written as each benchmark ends, so a later failure or interruption keeps what was measured.
        if (!quick) await saveResults([result], benchmarks.map((x) => x.name));
      } catch (err) {
        failed = true;
        if (interrupted) break;
        log(`${b.name} failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
      } finally {
        await infra.endBenchmark();
      }
    }
  } finally {
    await infra.stop();
  }
  if (interrupted) return 130;
  if (quick) log('--quick: results not written');
  else if (results.length) log(`results written to docs/benchmarks.json and docs/benchmarks.md`);
  return failed ? 1 : 0;
}

main().then(
  (code) => process.exit(code),
  (err: unknown) => {
    log(`failed: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}`);
    process.exit(1);
  },
);
