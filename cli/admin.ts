// Operator commands: `npm run --silent admin -- <command> [flags]`. Each prints one JSON object.
import { loadConfig } from '../platform/config.ts';
import { AppError } from '../platform/errors.ts';
import { runMain } from '../platform/entrypoint.ts';
import { withAdminContext } from './admin/context.ts';
import { accountCreateCommand, accountDisableCommand, accountLinkExternalCommand, accountListCommand } from './admin/commands/account.ts';
import { creditsGrantCommand, creditsShowCommand, limitsSetCommand } from './admin/commands/credits.ts';
import { memoryEventCommand } from './admin/commands/memory.ts';
import { selfcheckCommand } from './admin/commands/selfcheck.ts';
import { sourceReleaseCommand } from './admin/commands/source.ts';
import { UsageError, type AdminCommand } from './admin/registry.ts';
import { commandFromArgv } from './lib/dispatch.ts';

const commands: AdminCommand[] = [
  accountCreateCommand,
  accountListCommand,
  accountDisableCommand,
  accountLinkExternalCommand,
  creditsGrantCommand,
  creditsShowCommand,
  limitsSetCommand,
  sourceReleaseCommand,
  memoryEventCommand,
  selfcheckCommand,
];

const USAGE = 'npm run --silent admin -- <command> [flags]';

runMain(async () => {
  const found = commandFromArgv(USAGE, commands, process.argv.slice(2));
  if (!found) return;
  const args = found.args;
  const config = loadConfig();
  try {
    await withAdminContext(config, (ctx) => found.command.run(ctx, args));
  } catch (err) {
    if (err instanceof UsageError) {
      process.stderr.write(`${err.message}\nusage: ${found.command.usage}\n`);
      process.exit(64);
    }
    if (err instanceof AppError) {
      process.stderr.write(`${err.code}: ${err.message}\n`);
      process.exit(1);
    }
    throw err;
  }
});
