/** Small statistics helpers for benchmark samples (all pure). */

function sortedCopy(values: readonly number[]): Float64Array {
  if (values.length === 0) throw new Error('statistics of no samples');
  return Float64Array.from(values).sort();
}

/** Linear-interpolated percentile of sorted samples (the "R-7" definition, numpy's default). */
function percentileOfSorted(sorted: Float64Array, p: number): number {
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  return sorted[lo]! + (sorted[Math.ceil(rank)]! - sorted[lo]!) * (rank - lo);
}

export function percentile(values: readonly number[], p: number): number {
  return percentileOfSorted(sortedCopy(values), p);
}

export function median(values: readonly number[]): number {
  return percentile(values, 50);
}

export function mean(values: readonly number[]): number {
  if (values.length === 0) throw new Error('statistics of no samples');
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

export type Summary = { count: number; mean: number; p50: number; p95: number; p99: number; min: number; max: number };

export function summarize(values: readonly number[]): Summary {
  const sorted = sortedCopy(values);
  return {
    count: sorted.length,
    mean: mean(values),
    p50: percentileOfSorted(sorted, 50),
    p95: percentileOfSorted(sorted, 95),
    p99: percentileOfSorted(sorted, 99),
    min: sorted[0]!,
    max: sorted[sorted.length - 1]!,
  };
}

/** Times `fn` once, in milliseconds (monotonic clock). */
export async function timeMs(fn: () => Promise<unknown>): Promise<number> {
  const started = performance.now();
  await fn();
  return performance.now() - started;
}

/** Rounds for storage and display: three significant-ish digits, no false precision. */
export function round(value: number): number {
  if (!Number.isFinite(value) || value === 0) return value;
  const digits = Math.max(0, 2 - Math.floor(Math.log10(Math.abs(value))));
  const f = 10 ** Math.min(digits, 6);
  return Math.round(value * f) / f;
}
