// `npm run docs:config`: writes docs/configuration.md from the settings' schema (platform/config.ts).
import { writeFile } from 'node:fs/promises';
import { renderConfigurationDoc } from '../platform/config-doc.ts';

await writeFile(new URL('../docs/configuration.md', import.meta.url), renderConfigurationDoc());
process.stdout.write('wrote docs/configuration.md\n');
