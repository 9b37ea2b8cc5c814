import type { CommandSpec, ParsedArgs } from '../lib/dispatch.ts';

/** A `cairn` command. Commands talk to the service's HTTP API; they never open its database. */
export type CairnCommand = CommandSpec & { run(args: ParsedArgs, env: NodeJS.ProcessEnv): Promise<void> };

/** A problem the user can fix (missing or wrong setting): printed without a stack, exit 64. */
export class CliUsageError extends Error {}
