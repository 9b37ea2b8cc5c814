import { settingGroups } from './config.ts';

/**
 * docs/configuration.md, rendered from the settings' schema: one list per component with each
 * variable's default (what the schema yields for an unset variable) and its description.
 */
export function renderConfigurationDoc(): string {
  const lines = [
    '# Configuration',
    '',
    '<!-- Generated from settingGroups in platform/config.ts by `npm run docs:config`. Do not edit by hand. -->',
    '',
    'Every setting is an environment variable (shown with its default), validated at start-up: a wrong',
    'value stops the process with a message naming the variable (exit code 78). `npm run cluster` and the',
    '`cairn` CLI read a few more, listed in [operations.md](operations.md) and the [README](../README.md).',
  ];
  for (const [group, shape] of Object.entries(settingGroups)) {
    lines.push('', `## ${group}`, '');
    for (const [name, schema] of Object.entries(shape)) {
      if (!schema.description) throw new Error(`${name} has no .describe() text in platform/config.ts`);
      const parsed = schema.safeParse(undefined);
      const fallback = parsed.success && parsed.data !== undefined ? ` = \`${String(parsed.data)}\`` : ' (unset)';
      lines.push(`- \`${name}\`${fallback}: ${schema.description}`);
    }
  }
  return `${lines.join('\n')}\n`;
}
