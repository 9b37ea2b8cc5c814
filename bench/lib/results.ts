import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { machineLine, type Machine } from './machine.ts';

// Raw results live in docs/benchmarks.json (one entry per benchmark, replaced when that benchmark runs
// again, kept when it does not); docs/benchmarks.md is rendered from it after every run.

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const RESULTS_JSON = path.join(root, 'docs', 'benchmarks.json');
export const RESULTS_MD = path.join(root, 'docs', 'benchmarks.md');

export type Unit = 'ms' | 'µs' | 'req/s' | 's' | 'MB' | 'MB/s' | 'docs/s' | '×' | 'writes/s' | 'events' | 'rows' | '%' | 'pages/s' | 'B';

/** A performance target: the metric's value should stay below (`<`) or above (`>`) `value`. */
/** `of: 'ratio'`: the target bounds the ratio to the baseline (e.g. < 1.5× REST), not the value itself. */
export type Target = { op: '<' | '<=' | '>' | '>='; value: number; text: string; of?: 'value' | 'ratio' };

export type Metric = {
  id: string;
  label: string;
  /** Median across the benchmark's repeated runs. */
  value: number;
  unit: Unit;
  target?: Target;
  /** What the value is compared with: a baseline measured in the same run, or a floor it cannot beat. */
  baseline?: { label: string; value: number; kind: 'baseline' | 'floor' };
  /** value / baseline.value when there is a baseline, otherwise value / target.value. */
  ratio?: number;
};

export type BenchmarkResult = {
  name: string;
  title: string;
  description: string;
  command: string;
  date: string;
  tookSeconds: number;
  /** The commit measured; `dirty` when tracked files had uncommitted changes. */
  code?: { commit: string; dirty: boolean };
  machine: Machine;
  /** CPU idle (all cores) in the 2 s before the benchmark started: well below 100 means a busy machine. */
  idleBeforeStartPercent: number;
  /** Share of the machine's CPU that other processes used during the benchmark (Linux only). */
  otherProcessesCpuPercent?: number;
  settings: Record<string, string | number>;
  metrics: Metric[];
  /** Detail tables rendered under the metrics (for example latency percentiles per endpoint). */
  tables?: Table[];
  notes: string[];
  /** Per-run numbers behind the medians. */
  runs: Record<string, unknown>;
};

export type Table = { title: string; columns: string[]; rows: (string | number)[][] };

export type ResultsFile = { schemaVersion: 1; benchmarks: Record<string, BenchmarkResult> };

export async function readResults(): Promise<ResultsFile> {
  try {
    const parsed = JSON.parse(await readFile(RESULTS_JSON, 'utf8')) as ResultsFile;
    if (parsed.schemaVersion === 1 && parsed.benchmarks) return parsed;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  return { schemaVersion: 1, benchmarks: {} };
}

async function writeAtomically(file: string, text: string) {
  const tmp = `${file}.tmp-${process.pid}`;
  await writeFile(tmp, text);
  await rename(tmp, file);
}

/** Stores the new results next to the kept ones and regenerates the Markdown. */
export async function saveResults(results: BenchmarkResult[], order: string[]): Promise<void> {
  const file = await readResults();
  for (const r of results) file.benchmarks[r.name] = r;
  const rank = (name: string) => (order.includes(name) ? order.indexOf(name) : order.length);
  const sorted = Object.fromEntries(
    Object.entries(file.benchmarks).sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b)),
  );
  const out: ResultsFile = { schemaVersion: 1, benchmarks: sorted };
  await writeAtomically(RESULTS_JSON, `${JSON.stringify(out, null, 2)}\n`);
  await writeAtomically(RESULTS_MD, renderMarkdown(out));
}

export function formatNumber(value: number): string {
  return value.toLocaleString('en-US', { maximumSignificantDigits: 3 });
}

export function formatValue(value: number, unit: Unit): string {
  return unit === '%' ? `${formatNumber(value)}%` : `${formatNumber(value)} ${unit}`;
}

function formatRatio(m: Metric): string {
  if (m.ratio === undefined) return '—';
  const r = m.ratio.toLocaleString('en-US', { maximumSignificantDigits: 3 });
  if (m.baseline) return `${r}× ${m.baseline.kind}`;
  return `${r}× target`;
}

function formatTarget(m: Metric): string {
  if (!m.target) return '—';
  const x = m.target.of === 'ratio' ? (m.ratio ?? Number.NaN) : m.value;
  const met = { '<': x < m.target.value, '<=': x <= m.target.value, '>': x > m.target.value, '>=': x >= m.target.value }[m.target.op];
  return `${m.target.text} (${met ? 'met' : 'not met'})`;
}

/**
 * One benchmark's results. The console gets everything (`detail`): the method, settings, detail tables
 * and notes. docs/benchmarks.md gets the headline table with its command and machine; the rest stays in
 * docs/benchmarks.json, and the why of each number is in the decision records.
 */
export function renderSection(r: BenchmarkResult, { detail = true }: { detail?: boolean } = {}): string {
  const lines = [
    `## ${r.name}: ${r.title}`,
    '',
    ...(detail
      ? [
          r.description,
          '',
          `- Command: \`${r.command}\``,
          `- Machine: ${machineLine(r.machine)}`,
          `- Date: ${r.date} (took ${Math.round(r.tookSeconds)} s)` +
            (r.code ? `; code: commit ${r.code.commit}${r.code.dirty ? ' with uncommitted changes' : ''}` : '') +
            `; CPU ${r.idleBeforeStartPercent}% idle before the start` +
            (r.otherProcessesCpuPercent === undefined
              ? ''
              : `, other processes used ${r.otherProcessesCpuPercent}% during the run`),
        ]
      : [
          `\`${r.command}\` on ${r.machine.cpu}, ${r.machine.cores} cores, ${r.machine.postgres}, ` +
            `${r.date.slice(0, 10)}` +
            (r.code ? ` at ${r.code.commit.slice(0, 7)}${r.code.dirty ? ' (uncommitted changes)' : ''}` : '') +
            `, CPU ${r.idleBeforeStartPercent}% idle before` +
            (r.otherProcessesCpuPercent === undefined ? '' : `, others ${r.otherProcessesCpuPercent}% during`) +
            '.',
        ]),
    ...(detail ? [`- Settings: ${Object.entries(r.settings).map(([k, v]) => `${k} ${v}`).join('; ')}`] : []),
    '',
    ...(detail
      ? [
          '| Metric | Median | Target | Baseline / floor | Ratio |',
          '|---|---:|---|---|---:|',
          ...r.metrics.map((m) => {
            const baseline = m.baseline ? `${m.baseline.label}: ${formatValue(m.baseline.value, m.unit)}` : '—';
            return `| ${m.label} | ${formatValue(m.value, m.unit)} | ${formatTarget(m)} | ${baseline} | ${formatRatio(m)} |`;
          }),
        ]
      : [
          '| Metric | Median | Target; baseline or floor (ratio) |',
          '|---|---:|---|',
          ...r.metrics.map((m) => {
            const against = [
              ...(m.target ? [formatTarget(m)] : []),
              ...(m.baseline ? [`${m.baseline.label}: ${formatValue(m.baseline.value, m.unit)} (${formatRatio(m)})`] : []),
            ];
            return `| ${m.label} | ${formatValue(m.value, m.unit)} | ${against.join('; ') || '—'} |`;
          }),
        ]),
  ];
  if (!detail) return lines.join('\n');
  for (const t of r.tables ?? []) {
    lines.push(
      '',
      `${t.title}:`,
      '',
      `| ${t.columns.join(' | ')} |`,
      `|${t.columns.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
      ...t.rows.map((row) => `| ${row.map((c) => (typeof c === 'number' ? formatNumber(c) : c)).join(' | ')} |`),
    );
  }
  if (r.notes.length) lines.push('', 'Notes:', '', ...r.notes.map((n) => `- ${n}`));
  return lines.join('\n');
}

export function renderMarkdown(file: ResultsFile): string {
  const sections = Object.values(file.benchmarks).map((r) => renderSection(r, { detail: false }));
  return [
    '# Benchmarks',
    '',
    '<!-- Generated by `npm run bench` from docs/benchmarks.json. Do not edit by hand: run the benchmark again. -->',
    '',
    'Performance targets as measured numbers, never timed assertions in tests: medians of repeated runs,',
    'with ratios to a baseline measured in the same run or a floor it cannot beat. Run `npm run bench',
    '[-- <name>]` on an idle machine and compare runs made back to back. Method, settings, per-run numbers',
    'and notes are in [benchmarks.json](benchmarks.json); the decision records explain the numbers.',
    '',
    ...sections.flatMap((s) => [s, '']),
  ].join('\n');
}
