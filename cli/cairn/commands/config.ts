import { UsageError } from '../../lib/dispatch.ts';
import { checkApiKey, normalizeBaseUrl, readConfigFile, updateConfigFile } from '../config.ts';
import { fields, when } from '../output.ts';
import { defineCommand } from '../registry.ts';

// The config file's settings: the default base URL and API key (flags and environment override them).

const SETTABLE = { 'base-url': 'baseUrl', 'api-key': 'apiKey' } as const;
type Settable = keyof typeof SETTABLE;

function settingName(raw: string | undefined): Settable {
  if (raw && raw in SETTABLE) return raw as Settable;
  throw new UsageError(`unknown setting ${raw}: one of ${Object.keys(SETTABLE).join(', ')}`);
}

/** An API key as its recognisable start only. */
const masked = (key: string | null | undefined) => (key ? `${key.slice(0, 13)}…` : null);

export const configShowCommand = defineCommand({
  name: 'config show',
  summary: 'Show the config file and the settings in effect (secrets masked)',
  usage: 'cairn config show',
  credential: 'none',
  async run(ctx) {
    const file = await readConfigFile(ctx.env);
    const s = ctx.settings;
    const sessions = Object.entries(file.sessions ?? {}).map(([baseUrl, x]) => ({ baseUrl, email: x.email, expiresAt: x.expiresAt }));
    const result = {
      configFile: s.configFile,
      file: { baseUrl: file.baseUrl ?? null, apiKey: masked(file.apiKey), sessions },
      effective: { baseUrl: s.baseUrl, apiKey: masked(s.apiKey), apiKeySource: s.apiKeySource, signedIn: s.session ? s.session.email : null },
    };
    ctx.out.result(result, () => [
      fields([
        ['config file', s.configFile],
        ['base URL', `${s.baseUrl}${file.baseUrl === s.baseUrl ? '' : ' (from flag or environment)'}`],
        ['API key', s.apiKey ? `${masked(s.apiKey)} from ${s.apiKeySource}` : 'none'],
        ['signed in', s.session ? `${s.session.email} until ${when(s.session.expiresAt)}` : 'no'],
      ]),
      ...(sessions.length ? ['', 'Stored CLI sessions:', ...sessions.map((x) => `  ${x.baseUrl}  ${x.email}  until ${when(x.expiresAt)}`)] : []),
    ].join('\n'));
  },
});

export const configSetCommand = defineCommand({
  name: 'config set',
  summary: 'Store the default base URL or API key in the config file',
  usage: 'cairn config set base-url|api-key VALUE',
  positionals: ['SETTING', 'VALUE'],
  credential: 'none',
  async run(ctx) {
    const [raw, value] = ctx.args.positionals as [string, string];
    const name = settingName(raw);
    const stored = name === 'base-url' ? normalizeBaseUrl(value, 'base-url') : checkApiKey(value, 'api-key');
    const configFile = await updateConfigFile(ctx.env, (c) => {
      c[SETTABLE[name]] = stored;
    });
    ctx.out.result({ configFile, setting: name, value: name === 'api-key' ? masked(stored) : stored }, () => `Stored ${name} in ${configFile}.`);
  },
});

export const configUnsetCommand = defineCommand({
  name: 'config unset',
  summary: 'Remove the stored base URL or API key',
  usage: 'cairn config unset base-url|api-key',
  positionals: ['SETTING'],
  credential: 'none',
  async run(ctx) {
    const name = settingName(ctx.args.positionals[0]);
    const configFile = await updateConfigFile(ctx.env, (c) => {
      delete c[SETTABLE[name]];
    });
    ctx.out.result({ configFile, setting: name, removed: true }, () => `Removed ${name} from ${configFile}.`);
  },
});

export const configCommands = [configShowCommand, configSetCommand, configUnsetCommand];
