// `npm run temporal:cli`: finds or builds the Temporal CLI and prints its path.
import { loadConfig } from '../platform/config.ts';
import { runMain } from '../platform/entrypoint.ts';
import { resolveTemporalCli } from '../runners/temporal-server/cli.ts';

runMain(async () => {
  const config = loadConfig();
  const cli = await resolveTemporalCli({ configured: config.temporal.cli, log: (m) => process.stderr.write(`${m}\n`) });
  process.stdout.write(`${cli}\n`);
});
