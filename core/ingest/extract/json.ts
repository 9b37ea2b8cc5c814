/**
 * JSON as path/value statements, one per line: `project: KestrelX`, `facts[0]: The launch ...`,
 * `["odd key"].x: 3`. The walk is iterative, so nesting depth is bounded by memory, not the call stack;
 * paths deeper than MAX_SHOWN_DEPTH segments are shortened to their first and last segments, and paths
 * longer than MAX_PATH_CHARS characters to their start and end.
 * Top-level keys of an object become sections.
 */
import { DocumentBuilder, collapseWhitespace } from './builder.ts';
import type { ExtractContext, OutlineEntry, RawExtraction } from './types.ts';

const MAX_SHOWN_DEPTH = 64;
const KEEP_EACH_END = 16;
const IDENT = /^[A-Za-z_$][\w$-]*$/;

const keySegment = (k: string) => (IDENT.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);

/**
 * Characters of a path shown before each value. Every value carries its path, so without a bound a
 * document of long keys nested deep stores its keys again for every value below them (a 64 KB upload
 * stored 102 MB of text).
 */
const MAX_PATH_CHARS = 160;

/** Cuts `s` at `at` without splitting a surrogate pair. */
const cutAt = (s: string, at: number) => (at > 0 && at < s.length && /[\uDC00-\uDFFF]/.test(s[at]!) ? at - 1 : at);

function showPath(segs: string[]): string {
  const strip = (s: string) => (s.startsWith('.') ? s.slice(1) : s);
  let shown = segs.length <= MAX_SHOWN_DEPTH
    ? strip(segs.join(''))
    : `${strip(segs.slice(0, KEEP_EACH_END).join(''))}…${strip(segs.slice(segs.length - KEEP_EACH_END).join(''))}`;
  if (shown.length > MAX_PATH_CHARS) {
    // The start (which top-level entry) and the end (the key the value belongs to) say the most.
    const head = shown.slice(0, cutAt(shown, MAX_PATH_CHARS / 4));
    shown = `${head}…${shown.slice(cutAt(shown, shown.length - (MAX_PATH_CHARS * 3) / 4))}`;
  }
  return shown;
}

function scalar(v: unknown): string {
  if (typeof v === 'string') {
    const s = collapseWhitespace(v);
    return s === '' ? '""' : s;
  }
  if (v === null) return 'null';
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  if (Array.isArray(v)) return '[]';
  return '{}';
}

type Frame =
  | { kind: 'object'; value: Record<string, unknown>; keys: string[]; i: number }
  | { kind: 'array'; value: unknown[]; i: number };

const isContainer = (v: unknown): v is Record<string, unknown> | unknown[] => typeof v === 'object' && v !== null;

function frameFor(v: Record<string, unknown> | unknown[]): Frame {
  return Array.isArray(v) ? { kind: 'array', value: v, i: 0 } : { kind: 'object', value: v, keys: Object.keys(v), i: 0 };
}

/** A top-level title, name or headline string, the first that has text. */
function titleOf(root: Record<string, unknown>): string | null {
  for (const k of ['title', 'name', 'headline']) {
    const v = root[k];
    if (typeof v === 'string' && collapseWhitespace(v)) return collapseWhitespace(v).slice(0, 300);
  }
  return null;
}

export function extractJson(root: unknown, ctx: ExtractContext): RawExtraction {
  const b = new DocumentBuilder(ctx.limits.maxTextChars);
  const warnings: string[] = [];
  const topIsObject = isContainer(root) && !Array.isArray(root);
  const outline: OutlineEntry[] = topIsObject ? Object.keys(root).map((k) => ({ path: [k] })) : [];
  const title = topIsObject ? titleOf(root) : null;
  let sep = '\n\n';
  let overLimit = false;
  let deep = false;
  const emit = (segs: string[], v: unknown) => {
    const value = scalar(v);
    b.block({ text: segs.length === 0 ? value : `${showPath(segs)}: ${value}`, links: [] }, sep);
    sep = '\n';
  };

  if (!isContainer(root)) {
    // A bare scalar; null and "" carry no text (extract() reports the document as empty).
    if (root !== null && !(typeof root === 'string' && collapseWhitespace(root) === '')) emit([], root);
  } else {
    const frames: Frame[] = [frameFor(root)];
    const segs: string[] = [];
    while (frames.length > 0) {
      if (b.length > ctx.limit) {
        overLimit = true;
        break;
      }
      const f = frames[frames.length - 1]!;
      let child: unknown;
      let seg: string;
      if (f.kind === 'array') {
        if (f.i >= f.value.length) {
          frames.pop();
          segs.pop();
          continue;
        }
        seg = `[${f.i}]`;
        child = f.value[f.i++];
      } else {
        if (f.i >= f.keys.length) {
          frames.pop();
          segs.pop();
          continue;
        }
        const key = f.keys[f.i++]!;
        seg = keySegment(key);
        child = f.value[key];
        if (frames.length === 1 && topIsObject) {
          b.startSection([key]);
          sep = '\n\n';
        }
      }
      segs.push(seg);
      if (segs.length > MAX_SHOWN_DEPTH) deep = true;
      const empty = isContainer(child) && (Array.isArray(child) ? child.length === 0 : Object.keys(child).length === 0);
      if (isContainer(child) && !empty) {
        frames.push(frameFor(child));
      } else {
        emit(segs, child);
        segs.pop();
      }
    }
  }
  if (deep) warnings.push(`The JSON is nested deeper than ${MAX_SHOWN_DEPTH} levels; long paths are shortened.`);
  const built = b.finish();
  return {
    title,
    text: built.text,
    sections: built.sections,
    links: [],
    pages: null,
    warnings,
    outline,
    overLimit: overLimit || built.text.length > ctx.limit,
  };
}
