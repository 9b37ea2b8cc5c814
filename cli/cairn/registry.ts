import type { CommandSpec, ParsedArgs } from '../lib/dispatch.ts';
import { UsageError } from '../lib/dispatch.ts';
import { checkApiKey, DEFAULT_BASE_URL, resolveSettings, type Settings } from './config.ts';
import { apiClient, type ApiClient } from './http.ts';
import { createOutput, type Output } from './output.ts';

/** A problem the user can fix (missing or wrong setting): printed without a stack, exit 64. */
export { UsageError as CliUsageError };

/**
 * Which credential a command's routes take (spec section 5):
 * - `session`: account management (keys, usage, whoami): the CLI session token from `cairn login`;
 * - `apiKey`: native memory routes and MCP: an API key only;
 * - `apiKeyOrSession`: classic query, ingest and job status: an API key, else the CLI session token;
 * - `none`: the sign-in routes.
 */
export type CredentialKind = 'session' | 'apiKey' | 'apiKeyOrSession' | 'none';

export type CommandContext = {
  args: ParsedArgs;
  env: NodeJS.ProcessEnv;
  out: Output;
  settings: Settings;
  /** The API client with the credential this command declared. */
  api: ApiClient;
};

/** A `cairn` command. Commands talk to the service's HTTP API; they never open its database. */
export type CairnCommand = CommandSpec & {
  credential: CredentialKind;
  run(ctx: CommandContext): Promise<void>;
};

const COMMON_OPTIONS = { json: { type: 'boolean' }, 'base-url': { type: 'string' } } as const;
const API_KEY_OPTION = { 'api-key': { type: 'string' } } as const;

/**
 * Declares a command with the options every command has (`--json`, `--base-url`, and `--api-key`
 * where an API key is used).
 */
export function defineCommand(def: Omit<CairnCommand, 'options'> & { options?: CommandSpec['options'] }): CairnCommand {
  const usesKey = def.credential === 'apiKey' || def.credential === 'apiKeyOrSession';
  return { ...def, options: { ...COMMON_OPTIONS, ...(usesKey ? API_KEY_OPTION : {}), ...def.options } };
}

export const str = { type: 'string' } as const;
export const flag = { type: 'boolean' } as const;
export const many = { type: 'string', multiple: true } as const;

export const signInHint = (s: Settings) => `not signed in to ${s.baseUrl}: run \`cairn login${s.baseUrl === DEFAULT_BASE_URL ? '' : ` --base-url ${s.baseUrl}`}\``;
const keyHint = (s: Settings) =>
  `no API key for ${s.baseUrl}: pass --api-key, set CAIRN_API_KEY, or store one with \`cairn keys create --save\` or \`cairn config set api-key KEY\``;

/** The credential a command of this kind sends, or a usage error saying how to configure one. */
export function bearerFor(kind: CredentialKind, s: Settings): string | null {
  const session = s.session && new Date(s.session.expiresAt).getTime() > Date.now() ? s.session : null;
  if (kind === 'none') return null;
  if (kind === 'session') {
    if (!session) throw new UsageError(s.session ? `the CLI session for ${s.baseUrl} has expired: run \`cairn login\`` : signInHint(s));
    return session.token;
  }
  if (s.apiKey) return checkApiKey(s.apiKey, s.apiKeySource!);
  if (kind === 'apiKeyOrSession' && session) return session.token;
  throw new UsageError(keyHint(s));
}

export async function commandContext(command: CairnCommand, args: ParsedArgs, env: NodeJS.ProcessEnv): Promise<CommandContext> {
  const v = args.values;
  const out = createOutput(v.json === true);
  const settings = await resolveSettings({ baseUrl: v['base-url'] as string | undefined, apiKey: v['api-key'] as string | undefined }, env);
  return { args, env, out, settings, api: apiClient(settings.baseUrl, bearerFor(command.credential, settings)) };
}

/** The string value of a flag (parseArgs types are wide). */
export const opt = (ctx: CommandContext, name: string): string | undefined => ctx.args.values[name] as string | undefined;
export const optList = (ctx: CommandContext, name: string): string[] => (ctx.args.values[name] as string[] | undefined) ?? [];
export const has = (ctx: CommandContext, name: string): boolean => ctx.args.values[name] === true;
