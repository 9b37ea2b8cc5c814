import { z } from 'zod';

/** The error envelope of spec section 7, used by every surface. */
export const ErrorEnvelope = z
  .object({
    error: z.object({
      code: z.string().describe('Stable error code (spec section 7).'),
      message: z.string(),
      requestId: z.string(),
    }),
  })
  .meta({ id: 'ErrorEnvelope' });

export type ErrorEnvelope = z.infer<typeof ErrorEnvelope>;

// NUL and the other C0 controls except tab, line feed and carriage return, DEL, the C1 controls
// (U+0080-U+009F, NEL among them), the bidirectional embeddings, overrides and isolates (U+202A-U+202E,
// U+2066-U+2069: they reorder what a person reads, as in "Trojan Source"), and UTF-16 surrogates
// without their pair (not Unicode: PostgreSQL refuses NUL, and a lone surrogate becomes U+FFFD on the
// way in, so an id or key would not be the one sent). The marks right-to-left text uses (U+200E,
// U+200F, U+061C) are text and pass.
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u0008\u000B\u000C\u000E-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** The path of the first string in `value` (keys included) holding a forbidden character, or null. */
export function controlCharacterPath(value: unknown, path: (string | number)[] = []): (string | number)[] | null {
  if (typeof value === 'string') return FORBIDDEN.test(value) ? path : null;
  if (Array.isArray(value)) {
    for (const [i, v] of value.entries()) {
      const found = controlCharacterPath(v, [...path, i]);
      if (found) return found;
    }
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) {
      if (FORBIDDEN.test(k)) return [...path, k];
      const found = controlCharacterPath(v, [...path, k]);
      if (found) return found;
    }
  }
  return null;
}

export const CONTROL_CHARACTER_MESSAGE =
  'must not contain control characters (other than tab, line feed and carriage return), bidirectional overrides or isolates, or unpaired surrogates';

/**
 * The one rule on every string a request carries (issue 24), applied to every route's body, query,
 * parameters and headers by the API's validator compiler and to every MCP tool's arguments: 400
 * validation_error naming the field, never a 500 from the database.
 */
export function withoutControlCharacters<T extends z.ZodType>(schema: T): T {
  return schema.superRefine((value, ctx) => {
    const path = controlCharacterPath(value);
    if (path) ctx.addIssue({ code: 'custom', path, message: CONTROL_CHARACTER_MESSAGE });
  });
}
