import { z } from 'zod';
import { Preset, Scope } from '../../../core/contracts/account.ts';
import { parseFlags } from '../../lib/dispatch.ts';
import { updateConfigFile } from '../config.ts';
import type { Json } from '../http.ts';
import { fields, table, when } from '../output.ts';
import { defineCommand, flag, many, str, type CommandContext } from '../registry.ts';

// API key lifecycle (spec 4.2) with the CLI session token. Secrets are shown once, when created or
// rotated; `--save` also stores the new key as the CLI's API key.

const keyFields = (k: Json): [string, unknown][] => [
  ['id', k.id],
  ['name', k.name],
  ['prefix', k.prefix],
  ['scopes', k.scopes.length ? k.scopes : '(none)'],
  ['max preset', k.maxPreset],
  ['status', k.status],
  ['created', when(k.createdAt)],
  ['last used', when(k.lastUsedAt)],
  ['revoked', k.revokedAt ? when(k.revokedAt) : undefined],
  ['replaced by', k.replacedBy ?? undefined],
];

/** Prints a key with its one-time secret, storing it first when --save was given. */
async function showNewKey(ctx: CommandContext, body: Json, verb: string) {
  const configFile = ctx.args.values.save === true
    ? await updateConfigFile(ctx.env, (c) => {
      c.apiKey = body.secret;
    })
    : null;
  ctx.out.result({ ...body, ...(configFile ? { savedTo: configFile } : {}) }, () => [
    `${verb} API key ${body.apiKey.name}.`,
    fields(keyFields(body.apiKey)),
    '',
    'Secret (shown only now; store it safely):',
    `  ${body.secret}`,
    configFile ? `\nSaved as the CLI's API key in ${configFile}.` : '',
  ].join('\n'));
}

export const keysListCommand = defineCommand({
  name: 'keys list',
  summary: 'List API keys (never secrets)',
  usage: 'cairn keys list',
  credential: 'session',
  async run({ api, out }) {
    const body = (await api.get('/v1/account/api-keys')).body;
    out.result(body, () => body.apiKeys.length === 0
      ? 'No API keys yet: `cairn keys create --name NAME`.'
      : table(['ID', 'NAME', 'PREFIX', 'SCOPES', 'PRESET', 'STATUS', 'LAST USED'],
        body.apiKeys.map((k: Json) => [k.id, k.name, k.prefix, k.scopes, k.maxPreset, k.status, when(k.lastUsedAt)])));
  },
});

export const keysCreateCommand = defineCommand({
  name: 'keys create',
  summary: 'Create an API key (default scopes ingest, query); --save stores it for the CLI',
  usage: 'cairn keys create --name NAME [--scope SCOPE]... [--max-preset accuracy|efficient] [--save]',
  credential: 'session',
  options: { name: str, scope: many, 'max-preset': str, save: flag },
  async run(ctx) {
    const f = parseFlags(z.object({
      name: z.string().trim().min(1).max(100),
      scope: z.array(Scope).optional(),
      'max-preset': Preset.optional(),
    }), ctx.args);
    const res = await ctx.api.post('/v1/account/api-keys', { name: f.name, scopes: f.scope, maxPreset: f['max-preset'] });
    await showNewKey(ctx, res.body, 'Created');
  },
});

export const keysRotateCommand = defineCommand({
  name: 'keys rotate',
  summary: 'Replace an API key; the old one stops working at once',
  usage: 'cairn keys rotate ID [--name NAME] [--save]',
  positionals: ['ID'],
  credential: 'session',
  options: { name: str, save: flag },
  async run(ctx) {
    const name = ctx.args.values.name as string | undefined;
    const res = await ctx.api.post(`/v1/account/api-keys/${encodeURIComponent(ctx.args.positionals[0]!)}/rotate`, name ? { name } : undefined);
    await showNewKey(ctx, res.body, 'Rotated; the replacement is');
  },
});

export const keysRevokeCommand = defineCommand({
  name: 'keys revoke',
  summary: 'Revoke an API key',
  usage: 'cairn keys revoke ID',
  positionals: ['ID'],
  credential: 'session',
  async run({ api, out, args }) {
    const body = (await api.delete(`/v1/account/api-keys/${encodeURIComponent(args.positionals[0]!)}`)).body;
    out.result(body, () => `Revoked API key ${body.apiKey.name}.\n${fields(keyFields(body.apiKey))}`);
  },
});

export const keyCommands = [keysListCommand, keysCreateCommand, keysRotateCommand, keysRevokeCommand];
