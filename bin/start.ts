// Local supervisor (`npm start`): brings up PostgreSQL and Temporal when they are not configured,
// migrates, runs the worker and the API as child processes, and stops everything on Ctrl-C.
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../platform/config.ts';
import { createLocalAccountIfEmpty } from '../core/auth/accounts.ts';
import { createOrm, migrate } from '../platform/db/orm.ts';
import { provideDatabase, provideTemporal, writeLocalCredentials } from '../runners/local/infra.ts';
import { assertDataDirFree, assertPortFree } from '../runners/preflight.ts';
import { answersOk, describeFailure, runMain, stopChild, supervisorShutdown, waitFor, workerReady } from '../platform/entrypoint.ts';
import { ensureConsoleBuilt } from '../api/console/build.ts';

const say = (message: string) => process.stdout.write(`[cairn] ${message}\n`);
const script = (name: string) => fileURLToPath(new URL(`./${name}.ts`, import.meta.url));

runMain(async () => {
  const started = performance.now();
  const config = loadConfig();
  const children: ChildProcess[] = [];
  // API and worker first (they drain), then Temporal, then PostgreSQL.
  const { stops, shutdown, shuttingDown } = supervisorShutdown(say, async () => {
    await Promise.all(children.map((child) => stopChild(child, config.shutdownTimeoutMs)));
  });

  try {
    // Before anything starts: another run holding the data directory, then every port this run needs.
    if (!config.databaseUrl) assertDataDirFree(config.dataDir);
    const ports: [string, number, string][] = [[config.host, config.port, 'PORT'], [config.host, config.mcpPort, 'MCP_PORT']];
    if (!config.databaseUrl) ports.push(['127.0.0.1', config.embeddedPostgresPort, 'EMBEDDED_POSTGRES_PORT']);
    if (!config.temporal.address) {
      ports.push(['127.0.0.1', config.temporal.devPort, 'TEMPORAL_DEV_PORT'], ['127.0.0.1', config.temporal.uiPort, 'TEMPORAL_UI_PORT']);
    }
    for (const [host, port, variable] of ports) await assertPortFree(host, port, variable);

    const db = await provideDatabase(config, { log: say });
    stops.push(db.stop);
    say(db.embedded ? `PostgreSQL (embedded) data in ${config.dataDir}/postgres` : 'PostgreSQL from DATABASE_URL');

    const temporal = await provideTemporal(config, { log: say });
    stops.push(temporal.stop);
    say(temporal.embedded ? `Temporal dev server at ${temporal.address}` : `Temporal at ${temporal.address}`);

    const orm = await createOrm(db.url);
    try {
      const applied = await migrate(orm);
      say(applied.length ? `applied migrations: ${applied.join(', ')}` : 'database schema is up to date');
      const local = await createLocalAccountIfEmpty(orm.em.fork(), config.accountDefaults);
      if (local) {
        const file = await writeLocalCredentials(config.dataDir, local);
        say(`created the local account ${local.email}; its password is in ${file} (readable only by you)`);
      }
    } finally {
      await orm.close();
    }

    // The browser console is built from source on first start (and after its sources change).
    await ensureConsoleBuilt(say);

    const env = {
      ...process.env,
      DATABASE_URL: db.url,
      TEMPORAL_ADDRESS: temporal.address,
      CAIRN_SUPERVISOR_PID: String(process.pid),
    };
    for (const name of ['worker', 'api']) {
      // The worker reports over an IPC channel when it polls its task queues.
      const stdio: StdioOptions = name === 'worker' ? ['ignore', 'inherit', 'inherit', 'ipc'] : ['ignore', 'inherit', 'inherit'];
      const child: ChildProcess = spawn(process.execPath, [script(name)], { env, stdio });
      child.on('exit', (code, signal) => {
        if (shuttingDown()) return;
        say(`${name} exited unexpectedly (${signal ?? `code ${code}`}); stopping everything`);
        void shutdown(1);
      });
      children.push(child);
    }

    // Ready means served and worked on: the API answers /readyz and the worker polls (it bundles its
    // workflow code first, which can take longer than the API's start on a busy machine).
    const readyz = `http://127.0.0.1:${config.port}/readyz`;
    await Promise.all([
      waitFor(() => answersOk(readyz), 120_000, readyz, shuttingDown),
      workerReady(children[0]!, 120_000),
    ]);
    if (shuttingDown()) return;
    const seconds = ((performance.now() - started) / 1000).toFixed(1);
    say(`ready in ${seconds}s`);
    say(`  API            ${config.publicBaseUrl}`);
    say(`  Console        ${config.publicBaseUrl}/`);
    say(`  OpenAPI        ${config.publicBaseUrl}/openapi.json  (docs: ${config.publicBaseUrl}/docs)`);
    say(`  MCP            http://${config.host}:${config.mcpPort}`);
    if (temporal.uiUrl) say(`  Temporal UI    ${temporal.uiUrl}`);
    say('press Ctrl-C to stop');
  } catch (err) {
    say(`start failed: ${describeFailure(err)}`);
    await shutdown(1);
  }
});

