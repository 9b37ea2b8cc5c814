import type { Infra } from './infra.ts';
import type { BenchmarkResult } from './results.ts';

export type BenchContext = {
  infra: Infra;
  /** `--quick`: one short run of everything, to check the harness; nothing is written. */
  quick: boolean;
  log: (message: string) => void;
};

/** What a benchmark measured; the runner adds the name, command, date, duration and machine. */
export type BenchOutput = Pick<BenchmarkResult, 'settings' | 'metrics' | 'notes' | 'runs' | 'tables'>;

export type Benchmark = {
  name: string;
  title: string;
  /** One paragraph for docs/benchmarks.md: what is measured and how. */
  description: string;
  run(ctx: BenchContext): Promise<BenchOutput>;
};
