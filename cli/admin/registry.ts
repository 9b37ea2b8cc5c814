import type { CommandSpec, ParsedArgs } from '../lib/dispatch.ts';
import type { AdminContext } from './context.ts';

export type { ParsedArgs };
export { parseFlags, UsageError } from '../lib/dispatch.ts';

export type AdminCommand = CommandSpec & { run(ctx: AdminContext, args: ParsedArgs): Promise<void> };
