#!/usr/bin/env node
// The `cairn` command (package bin): a terminal client of a Cairn service over its HTTP API. Each
// command prints one result (one JSON document with --json) and exits non-zero with the error code on
// failure; see cli/cairn/failure.ts for the exit statuses.
import { authCommands } from './cairn/commands/auth.ts';
import { configCommands } from './cairn/commands/config.ts';
import { ingestCommands } from './cairn/commands/ingest.ts';
import { keyCommands } from './cairn/commands/keys.ts';
import { mcpCommand } from './cairn/commands/mcp.ts';
import { memoryCommands } from './cairn/commands/memory.ts';
import { queryCommand } from './cairn/commands/query.ts';
import { usageCommand } from './cairn/commands/usage.ts';
import { reportFailure } from './cairn/failure.ts';
import { createOutput } from './cairn/output.ts';
import { commandContext, type CairnCommand, type CommandContext } from './cairn/registry.ts';
import { commandFromArgv } from './lib/dispatch.ts';

const commands: CairnCommand[] = [
  ...authCommands,
  ...keyCommands,
  usageCommand,
  ...ingestCommands,
  queryCommand,
  ...memoryCommands,
  ...configCommands,
  mcpCommand,
];
const USAGE = `cairn <command> [flags]

Every command takes --base-url URL (else CAIRN_BASE_URL, else the config file) and --json (one JSON
document on stdout); commands that use an API key take --api-key KEY (else CAIRN_API_KEY, else the
config file). \`cairn <command> --help\` shows one command.`;

// `cairn jobs | head -1`: a reader that stops early is not an error.
process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code !== 'EPIPE') throw err;
  process.exit(process.exitCode ?? 0);
});

async function main(): Promise<void> {
  const found = commandFromArgv(USAGE, commands, process.argv.slice(2));
  if (!found) return;
  let ctx: CommandContext | null = null;
  try {
    ctx = await commandContext(found.command, found.args, process.env);
    await found.command.run(ctx);
  } catch (err) {
    // exitCode rather than exit(): stdout is flushed before the process ends.
    process.exitCode = reportFailure(err, ctx?.out ?? createOutput(found.args.values.json === true));
  }
}

await main();
