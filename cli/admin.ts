// Operator commands: `npm run --silent admin -- <command> [flags]`. Each prints one JSON object.
import { parseArgs } from 'node:util';
import { loadConfig } from '../shared/config.ts';
import { AppError } from '../shared/errors.ts';
import { runMain } from '../shared/process.ts';
import { withAdminContext } from './admin/context.ts';
import { accountCreateCommand, accountDisableCommand, accountListCommand } from './admin/commands/account.ts';
import { creditsGrantCommand, creditsShowCommand, limitsSetCommand } from './admin/commands/credits.ts';
import { selfcheckCommand } from './admin/commands/selfcheck.ts';
import { sourceReleaseCommand } from './admin/commands/source.ts';
import { UsageError, type AdminCommand } from './admin/registry.ts';

const commands: AdminCommand[] = [
  accountCreateCommand,
  accountListCommand,
  accountDisableCommand,
  creditsGrantCommand,
  creditsShowCommand,
  limitsSetCommand,
  sourceReleaseCommand,
  selfcheckCommand,
];

function help(): string {
  return [
    'usage: npm run --silent admin -- <command> [flags]',
    '',
    ...commands.map((c) => `  ${c.usage.padEnd(44)} ${c.summary}`),
  ].join('\n');
}

function findCommand(argv: string[]): { command: AdminCommand; rest: string[] } | undefined {
  for (const command of commands) {
    const words = command.name.split(' ');
    if (words.every((w, i) => argv[i] === w)) return { command, rest: argv.slice(words.length) };
  }
  return undefined;
}

runMain(async () => {
  const argv = process.argv.slice(2);
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') {
    process.stdout.write(`${help()}\n`);
    return;
  }
  const found = findCommand(argv);
  if (!found) {
    process.stderr.write(`unknown command: ${argv.join(' ')}\n${help()}\n`);
    process.exit(64);
  }
  let args;
  try {
    args = parseArgs({ args: found.rest, options: found.command.options, allowPositionals: false, strict: true });
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\nusage: ${found.command.usage}\n`);
    process.exit(64);
  }
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
