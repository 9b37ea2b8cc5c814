#!/usr/bin/env node
// The `cairn` command (package bin). Commands talk to a Cairn service over HTTP with credentials from
// the environment; `cairn mcp` serves the MCP tools over stdio. More commands register here.
import { mcpCommand } from './cairn/commands/mcp.ts';
import { CliUsageError, type CairnCommand } from './cairn/registry.ts';
import { commandFromArgv } from './lib/dispatch.ts';

const commands: CairnCommand[] = [mcpCommand];
const USAGE = 'cairn <command> [flags]';

async function main(): Promise<void> {
  const found = commandFromArgv(USAGE, commands, process.argv.slice(2));
  if (!found) return;
  try {
    await found.command.run(found.args, process.env);
  } catch (err) {
    if (err instanceof CliUsageError) {
      process.stderr.write(`cairn: ${err.message}\n`);
      process.exit(64);
    }
    process.stderr.write(`cairn: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  }
}

await main();
