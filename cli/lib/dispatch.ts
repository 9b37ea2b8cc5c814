import { parseArgs, type ParseArgsConfig } from 'node:util';

/** What a command line tool's command declares; `run` gets the parsed flags. */
export type CommandSpec = {
  /** One or two words: `mcp`, `account create`. */
  name: string;
  summary: string;
  usage: string;
  options: NonNullable<ParseArgsConfig['options']>;
};

export type ParsedArgs = {
  values: Record<string, string | boolean | (string | boolean)[] | undefined>;
  positionals: string[];
};

export function helpText(usage: string, commands: readonly CommandSpec[]): string {
  return [`usage: ${usage}`, '', ...commands.map((c) => `  ${c.usage.padEnd(44)} ${c.summary}`)].join('\n');
}

/**
 * Finds the command the argument words name and parses its flags (strict: unknown flags and
 * positionals are refused). `help` when asked for help or given nothing, `usage` with a message when
 * the line is wrong: the caller prints it and exits 64 (EX_USAGE).
 */
export function dispatch<C extends CommandSpec>(
  usage: string,
  commands: readonly C[],
  argv: string[],
): { kind: 'help'; message: string } | { kind: 'usage'; message: string } | { kind: 'run'; command: C; args: ParsedArgs } {
  if (argv.length === 0 || argv[0] === 'help' || argv[0] === '--help') return { kind: 'help', message: helpText(usage, commands) };
  const command = commands.find((c) => c.name.split(' ').every((w, i) => argv[i] === w));
  if (!command) return { kind: 'usage', message: `unknown command: ${argv.join(' ')}\n${helpText(usage, commands)}` };
  try {
    const rest = argv.slice(command.name.split(' ').length);
    return { kind: 'run', command, args: parseArgs({ args: rest, options: command.options, allowPositionals: false, strict: true }) };
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
