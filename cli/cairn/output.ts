import type { Json } from './http.ts';

// The one output module of the `cairn` commands. A command produces one result: with --json it is
// printed as a single JSON document on stdout (for scripts); otherwise as text for a person.
// Instructions and progress lines go to stderr in both modes, so stdout stays parseable.

export type Output = {
  json: boolean;
  result(value: unknown, human: () => string): void;
  note(line: string): void;
};

export function createOutput(json: boolean): Output {
  return {
    json,
    result(value, human) {
      process.stdout.write(json ? `${JSON.stringify(value, null, 2)}\n` : `${human().replace(/\n+$/, '')}\n`);
    },
    note(line) {
      process.stderr.write(`${line}\n`);
    },
  };
}

/** An ISO timestamp as `2026-11-23 16:44 UTC`; null as `-`. */
export function when(iso: unknown): string {
  if (typeof iso !== 'string' || !iso) return '-';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

const cell = (v: unknown): string => (v === null || v === undefined || v === '' ? '-' : Array.isArray(v) ? v.join(',') : String(v));

/** Columns padded to their widest cell. */
export function table(headers: string[], rows: unknown[][]): string {
  const cells = [headers, ...rows.map((r) => r.map(cell))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n');
}

/** `label: value` lines with the values aligned; undefined values are left out. */
export function fields(pairs: [string, unknown][]): string {
  const shown = pairs.filter(([, v]) => v !== undefined);
  const width = Math.max(0, ...shown.map(([k]) => k.length)) + 1;
  return shown.map(([k, v]) => `${`${k}:`.padEnd(width)} ${cell(v)}`).join('\n');
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isScalar = (v: unknown) => v === null || typeof v !== 'object';
const scalar = (v: unknown) => (v === null || v === undefined ? '-' : String(v));
const pad = (n: number) => ' '.repeat(n);

/**
 * Any JSON value as indented `key: value` text, for records whose fields the contract leaves open
 * (memory objects, query evidence): nothing is hidden and nothing is assumed about names.
 */
export function tree(value: unknown, indent = 0): string {
  if (isScalar(value)) {
    const s = scalar(value);
    return s.includes('\n') ? s.split('\n').map((l) => pad(indent) + l).join('\n') : pad(indent) + s;
  }
  if (Array.isArray(value)) {
    if (value.length === 0) return `${pad(indent)}(none)`;
    if (value.every(isScalar)) return pad(indent) + value.map(scalar).join(', ');
    return value.map((item) => {
      const body = tree(item, indent + 2);
      return `${pad(indent)}- ${body.slice(indent + 2)}`;
    }).join('\n');
  }
  const entries = Object.entries(value as Record<string, unknown>);
  if (entries.length === 0) return `${pad(indent)}{}`;
  return entries.map(([k, v]) => {
    if (isScalar(v) && !(typeof v === 'string' && v.includes('\n'))) return `${pad(indent)}${k}: ${scalar(v)}`;
    if (Array.isArray(v) && (v.length === 0 || v.every(isScalar))) return `${pad(indent)}${k}: ${v.length ? v.map(scalar).join(', ') : '(none)'}`;
    return `${pad(indent)}${k}:\n${tree(v, indent + 2)}`;
  }).join('\n');
}

/** A response without its schemaVersion marker (noise for a person). */
export function withoutVersion(body: Json): Json {
  if (!isObject(body)) return body;
  const { schemaVersion: _ignored, ...rest } = body;
  return rest;
}

/**
 * A page response of unknown shape: its first array field is the list (each element a block, separated
 * by blank lines), the other fields (pagination) follow.
 */
export function renderPage(body: Json, empty: string): string {
  const rest = withoutVersion(body);
  if (Array.isArray(rest)) return rest.length ? rest.map((i) => tree(i)).join('\n\n') : empty;
  if (!isObject(rest)) return tree(rest);
  const listKey = Object.keys(rest).find((k) => Array.isArray(rest[k]));
  if (!listKey) return tree(rest);
  const items = rest[listKey] as unknown[];
  const { [listKey]: _list, ...others } = rest;
  const parts = [items.length ? items.map((i) => tree(i)).join('\n\n') : empty];
  if (Object.keys(others).length) parts.push(tree(others));
  return parts.join('\n\n');
}

/** Every object inside `value` (itself included) that has the field `key`, outermost first. */
export function findObjects(value: unknown, key: string): Record<string, unknown>[] {
  const found: Record<string, unknown>[] = [];
  const visit = (v: unknown) => {
    if (Array.isArray(v)) v.forEach(visit);
    else if (isObject(v)) {
      if (key in v) found.push(v);
      else Object.values(v).forEach(visit);
    }
  };
  visit(value);
  return found;
}
