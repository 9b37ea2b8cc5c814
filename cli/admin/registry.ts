import type { z } from 'zod';
import type { CommandSpec, ParsedArgs } from '../lib/dispatch.ts';
import type { AdminContext } from './context.ts';

export type { ParsedArgs };

export type AdminCommand = CommandSpec & { run(ctx: AdminContext, args: ParsedArgs): Promise<void> };

export class UsageError extends Error {}

/** Validates a command's flags with a zod schema; a bad flag is a usage error naming it. */
export function parseFlags<T extends z.ZodType>(schema: T, args: ParsedArgs): z.infer<T> {
  const res = schema.safeParse(args.values);
  if (!res.success) throw new UsageError(res.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
  return res.data;
}
