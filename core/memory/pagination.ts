import { validationError } from '../../platform/errors.ts';

export const iso = (d: Date | string | null | undefined): string | null => (d == null ? null : new Date(d).toISOString());

/** Opaque cursors: the sort key of the last row returned, base64url-encoded JSON. */
export function encodeCursor(key: unknown[]): string {
  return Buffer.from(JSON.stringify(key)).toString('base64url');
}

export function decodeCursor(cursor: string | undefined, arity: number): unknown[] | undefined {
  if (cursor === undefined) return undefined;
  try {
    const key = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown;
    if (Array.isArray(key) && key.length === arity && key.every((k) => typeof k === 'string' || typeof k === 'number')) return key;
  } catch {
    // falls through to the validation error
  }
  throw validationError('cursor is not valid; pass the next_cursor of the previous page.');
}

/** One page out of limit + 1 fetched rows. */
export function page<R, T>(rows: R[], limit: number, keyOf: (r: R) => unknown[], map: (r: R) => T) {
  const hasMore = rows.length > limit;
  const shown = rows.slice(0, limit);
  return {
    schemaVersion: 'service-memory-page-v1' as const,
    items: shown.map(map),
    pagination: {
      limit,
      returned: shown.length,
      has_more: hasMore,
      next_cursor: hasMore ? encodeCursor(keyOf(shown[shown.length - 1]!)) : null,
    },
  };
}
