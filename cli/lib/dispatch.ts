import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { z } from 'zod';

/** What a command line tool's command declares; `run` gets the parsed flags. */
export type CommandSpec = {
  /** One or more words: `mcp`, `account create`, `memory peers list`. */
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
  /**
   * Names of the positional arguments after the command words (`ID`, `URL`); a trailing `?` marks an
   * optional one. None declared: positionals are refused.
   */
  positionals?: string[];
};

export type ParsedArgs = {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
};

/** A problem with the command line or a setting the user can fix: printed without a stack, exit 64. */
export class UsageError extends Error {}

/** Validates a command's flags with a zod schema; a bad flag is a usage error naming it. */
export function parseFlags<T extends z.ZodType>(schema: T, args: ParsedArgs): z.infer<T> {
  const res = schema.safeParse(args.values);
  if (!res.success) throw new UsageError(res.error.issues.map((i) => `--${i.path.join('.')}: ${i.message}`).join('\n'));
  return res.data;
}

export function helpText(usage: string, commands: readonly CommandSpec[]): string {
  // A usage too long for the column puts its summary on the next line.
  const line = (c: CommandSpec) => (c.usage.length <= 44 ? `  ${c.usage.padEnd(44)} ${c.summary}` : `  ${c.usage}\n  ${' '.repeat(44)} ${c.summary}`);
  return [`usage: ${usage}`, '', ...commands.map(line)].join('\n');
}

const words = (c: CommandSpec) => c.name.split(' ');

function checkPositionals(command: CommandSpec, given: string[]): string | null {
  const declared = command.positionals ?? [];
  const required = declared.filter((p) => !p.endsWith('?')).length;
  if (given.length < required) return `missing ${declared.slice(given.length, required).join(' ')}`;
  if (given.length > declared.length) return `unexpected argument: ${given[declared.length]}`;
  return null;
}

/**
 * Finds the command the argument words name (the longest name that matches, so `jobs show` wins over
 * `jobs`) and parses its flags (strict: unknown flags and undeclared positionals are refused). `help`
 * when asked for help or given nothing (a command's own usage for `<command> --help`, the commands of a
 * group for a bare group word), `usage` with a message when the line is wrong: the caller prints it and
 * exits 64 (EX_USAGE).
 */
export function dispatch<C extends CommandSpec>(
  usage: string,
  commands: readonly C[],
  argv: string[],
): { kind: 'help'; message: string } | { kind: 'usage'; message: string } | { kind: 'run'; command: C; args: ParsedArgs } {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') return { kind: 'help', message: helpText(usage, commands) };
  const command = commands
    .filter((c) => words(c).every((w, i) => argv[i] === w))
    .sort((a, b) => words(b).length - words(a).length)[0];
  if (!command) {
    // `cairn keys`: the commands of that group, as help when nothing more was typed.
    const group = commands.filter((c) => words(c)[0] === argv[0]);
    if (group.length > 0 && argv.length === 1) return { kind: 'help', message: helpText(usage, group) };
    return { kind: 'usage', message: `unknown command: ${argv.join(' ')}\n${helpText(usage, group.length > 0 ? group : commands)}` };
  }
  const rest = argv.slice(words(command).length);
  if (rest.includes('--help') || rest.includes('-h')) return { kind: 'help', message: `usage: ${command.usage}\n\n${command.summary}` };
  try {
    const args = parseArgs({ args: rest, options: command.options, allowPositionals: (command.positionals?.length ?? 0) > 0, strict: true });
    const wrong = checkPositionals(command, args.positionals);
    if (wrong) return { kind: 'usage', message: `${wrong}\nusage: ${command.usage}` };
    return { kind: 'run', command, args };
  } catch (err) {
    return { kind: 'usage', message: `${(err as Error).message}\nusage: ${command.usage}` };
  }
}

/**
 * The command line's command, or null after printing the help; a wrong line prints why on stderr and
 * exits 64 (EX_USAGE).
 */
export function commandFromArgv<C extends CommandSpec>(usage: string, commands: readonly C[], argv: string[]): { command: C; args: ParsedArgs } | null {
  const found = dispatch(usage, commands, argv);
  if (found.kind === 'help') {
    process.stdout.write(`${found.message}\n`);
    return null;
  }
  if (found.kind === 'usage') {
    process.stderr.write(`${found.message}\n`);
    process.exit(64);
  }
  return found;
}
