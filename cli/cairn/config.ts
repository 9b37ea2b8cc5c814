import { randomBytes } from 'node:crypto';
import { chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { API_KEY_PREFIX } from '../../core/contracts/auth.ts';
import { UsageError } from '../lib/dispatch.ts';

// The CLI's settings file: $XDG_CONFIG_HOME/cairn/config.json (or ~/.config/cairn/config.json), mode
// 0600 in a 0700 directory, because it holds the CLI session token and possibly an API key. The base
// URL and the API key come from a flag, else the environment, else this file; a CLI session token is
// only ever sent to the service it was issued by (stored per base URL).

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

const StoredSession = z.object({ token: z.string().min(1), expiresAt: z.string(), email: z.string() });
export type StoredSession = z.infer<typeof StoredSession>;

const ConfigFile = z.object({
  baseUrl: z.string().optional(),
  apiKey: z.string().optional(),
  sessions: z.record(z.string(), StoredSession).optional(),
});
export type ConfigFile = z.infer<typeof ConfigFile>;

export function configPath(env: NodeJS.ProcessEnv): string {
  const xdg = env.XDG_CONFIG_HOME?.trim();
  // The XDG spec ignores a relative XDG_CONFIG_HOME.
  const base = xdg && path.isAbsolute(xdg) ? xdg : path.join(env.HOME?.trim() || homedir(), '.config');
  return path.join(base, 'cairn', 'config.json');
}

export async function readConfigFile(env: NodeJS.ProcessEnv): Promise<ConfigFile> {
  const file = configPath(env);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new UsageError(`cannot read ${file}: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new UsageError(`${file} is not valid JSON; fix or delete it`);
  }
  const res = ConfigFile.safeParse(parsed);
  if (!res.success) throw new UsageError(`${file} is not a cairn config file: ${res.error.issues[0]?.message}`);
  return res.data;
}

/** Replaces the file atomically (temporary file, then rename), always 0600 in a 0700 directory. */
async function writeConfigFile(env: NodeJS.ProcessEnv, config: ConfigFile): Promise<string> {
  const file = configPath(env);
  await mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const tmp = `${file}.${randomBytes(4).toString('hex')}.tmp`;
  try {
    await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
    // The umask cannot widen 0600, but a chmod makes the mode explicit whatever created the file.
    await chmod(tmp, 0o600);
    await rename(tmp, file);
  } catch (err) {
    await rm(tmp, { force: true });
    throw new UsageError(`cannot write ${file}: ${(err as Error).message}`);
  }
  return file;
}

/** Reads, changes and writes the config file; returns its path. */
export async function updateConfigFile(env: NodeJS.ProcessEnv, change: (config: ConfigFile) => void): Promise<string> {
  const config = await readConfigFile(env);
  change(config);
  return writeConfigFile(env, config);
}

export function normalizeBaseUrl(raw: string, from: string): string {
  const value = raw.trim().replace(/\/+$/, '');
  if (!URL.canParse(value) || !/^https?:$/.test(new URL(value).protocol)) throw new UsageError(`${from}: not an http(s) URL: ${raw}`);
  return value;
}

export function checkApiKey(raw: string, from: string): string {
  const value = raw.trim();
  if (!value.startsWith(API_KEY_PREFIX)) throw new UsageError(`${from} does not look like an API key (${API_KEY_PREFIX}...)`);
  return value;
}

export type Settings = {
  baseUrl: string;
  /** As given (checked when used: a malformed stored key must not block `cairn config unset`). */
  apiKey: string | null;
  /** Where the API key came from, for messages. */
  apiKeySource: string | null;
  /** The CLI session stored for this base URL, if any (expired ones are kept until used and refused). */
  session: StoredSession | null;
  configFile: string;
};

/** Flag, then environment, then config file (then the default base URL). */
export async function resolveSettings(flags: { baseUrl?: string; apiKey?: string }, env: NodeJS.ProcessEnv): Promise<Settings> {
  const file = await readConfigFile(env);
  const configFile = configPath(env);
  const pick = (flag: string | undefined, flagName: string, envName: string, fromFile: string | undefined) => {
    if (flag?.trim()) return { value: flag, from: flagName };
    if (env[envName]?.trim()) return { value: env[envName]!, from: envName };
    if (fromFile?.trim()) return { value: fromFile, from: configFile };
    return null;
  };
  const base = pick(flags.baseUrl, '--base-url', 'CAIRN_BASE_URL', file.baseUrl);
  const baseUrl = base ? normalizeBaseUrl(base.value, base.from) : DEFAULT_BASE_URL;
  const key = pick(flags.apiKey, '--api-key', 'CAIRN_API_KEY', file.apiKey);
  return {
    baseUrl,
    apiKey: key ? key.value.trim() : null,
    apiKeySource: key?.from ?? null,
    session: file.sessions?.[baseUrl] ?? null,
    configFile,
  };
}
