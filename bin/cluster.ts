// `npm run cluster`: the production shape on one machine (docker-compose.yml without Docker): PostgreSQL
// (DATABASE_URL, or an embedded one), a real Temporal server on it with the Temporal UI, CLUSTER_APIS API
// processes behind a local load balancer and CLUSTER_WORKERS workers. Every process the script started
// is started again when it dies; Ctrl-C stops everything. docs/operations.md, Production shape.
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureConsoleBuilt } from '../api/console/build.ts';
import { startBalancer, type Balancer, type Upstream } from '../runners/cluster/balancer.ts';
import { clusterLayout, loadClusterSettings, type ClusterLayout } from '../runners/cluster/layout.ts';
import { supervise, type Supervised } from '../runners/cluster/supervisor.ts';
import {
  ensureNamespace, resolveTemporalBinaries, temporalUiCommand, setUpTemporalSchemas, temporalServerArgs, temporalServerEnv,
} from '../runners/cluster/temporal.ts';
import { loadConfig, type Config } from '../platform/config.ts';
import { provideDatabase } from '../runners/local/infra.ts';
import { assertPortFree, makeDataDir } from '../runners/preflight.ts';
import { createLogger, type Logger } from '../platform/logger.ts';
import { describeFailure, runMain, supervisorShutdown, waitFor } from '../platform/entrypoint.ts';
import { temporalServing } from '../runners/temporal-server/dev-server.ts';

const say = (message: string) => process.stdout.write(`[cluster] ${message}\n`);
const script = (name: string) => fileURLToPath(new URL(`./${name}.ts`, import.meta.url));

/** What the start-up steps share: the settings, where logs go, the processes started so far. */
type Cluster = {
  config: Config;
  settings: ReturnType<typeof loadClusterSettings>;
  layout: ClusterLayout;
  logs: string;
  processes: Supervised[];
  shuttingDown: () => boolean;
};
type ApiSlot = { name: string } & ReturnType<ClusterLayout['api']>;

runMain(async () => {
  const started = performance.now();
  // Its own data directory and embedded-database port, so it runs beside `npm start`.
  const env = { DATA_DIR: '.data/cluster', EMBEDDED_POSTGRES_PORT: '54339', ...process.env };
  const config = loadConfig(env);
  const settings = loadClusterSettings(env);
  const layout = clusterLayout(settings.port);
  const logger = createLogger(config, { name: 'cluster' });
  const processes: Supervised[] = [];
  const balancers: Balancer[] = [];
  const { stops, shutdown, shuttingDown } = supervisorShutdown(say, async () => {
    await Promise.all(balancers.map((b) => b.close()));
    // APIs and workers first (they drain), then the UI and Temporal; PostgreSQL is the last of `stops`.
    const cairn = (p: Supervised) => /^(api|worker)-/.test(p.name);
    await Promise.all(processes.filter(cairn).map((p) => p.stop(config.shutdownTimeoutMs)));
    await Promise.all(processes.filter((p) => !cairn(p)).map((p) => p.stop(10_000)));
  });

  try {
    const apis = Array.from({ length: settings.apis }, (_, i): ApiSlot => ({ name: `api-${i + 1}`, ...layout.api(i) }));
    await assertPortsFree(layout, apis);
    const logs = await makeDataDir(config.dataDir);
    const cluster: Cluster = { config, settings, layout, logs, processes, shuttingDown };

    const db = await provideDatabase(config, { log: say });
    stops.push(db.stop);
    say(db.embedded ? `PostgreSQL (embedded) data in ${config.dataDir}/postgres` : 'PostgreSQL from DATABASE_URL');
    await startTemporal(cluster, db.url, logger);
    await ensureConsoleBuilt(say);

    const publicBaseUrl = process.env.PUBLIC_BASE_URL ?? `http://127.0.0.1:${layout.balancer.api}`;
    const polling = startCairn(cluster, apis, db.url, publicBaseUrl);
    const up = checkHealth(apis);
    stops.push(async () => clearInterval(up.timer));
    const routeTo = (pick: (api: ApiSlot) => number) => ({
      host: config.host,
      upstreams: apis.map((a): Upstream => ({ name: a.name, port: pick(a) })),
      isUp: (u: Upstream) => up.names.has(u.name),
      markDown: (u: Upstream) => void up.names.delete(u.name),
    });
    balancers.push(await startBalancer({ ...routeTo((a) => a.api), port: layout.balancer.api }));
    balancers.push(await startBalancer({ ...routeTo((a) => a.mcp), port: layout.balancer.mcp }));

    await waitFor(async () => up.names.size === apis.length, 180_000, 'the API processes', shuttingDown);
    await waitFor(async () => polling.size === settings.workers, 180_000, 'the workers', shuttingDown);
    say(`ready in ${((performance.now() - started) / 1000).toFixed(1)}s: ${settings.apis} API and ${settings.workers} worker processes`);
    say(`  API (balanced)   ${publicBaseUrl}`);
    say(`  MCP (balanced)   http://127.0.0.1:${layout.balancer.mcp}`);
    say(`  Temporal         ${layout.temporalAddress}`);
    say(`  Temporal UI      http://127.0.0.1:${layout.temporalUi}`);
    say(`  logs             ${logs} (Temporal); API and worker logs here`);
    say('press Ctrl-C to stop');
  } catch (err) {
    say(`start failed: ${describeFailure(err)}`);
    await shutdown(1);
  }
});

/** Every port the cluster listens on is free before anything starts. */
async function assertPortsFree(layout: ClusterLayout, apis: ApiSlot[]) {
  const ports: [number, string][] = [
    [layout.balancer.api, 'CLUSTER_PORT'], [layout.balancer.mcp, 'CLUSTER_PORT+1'], [layout.temporalUi, 'CLUSTER_PORT+2'],
    ...apis.flatMap((a): [number, string][] => [[a.api, `${a.name} (CLUSTER_PORT+…)`], [a.mcp, `${a.name} MCP`]]),
    ...Object.values({ ...layout.temporal, ...layout.temporal.membership }).filter((p) => typeof p === 'number').map((p): [number, string] => [p, 'Temporal server (CLUSTER_PORT+30…38)']),
  ];
  for (const [port, what] of ports) await assertPortFree('127.0.0.1', port, what);
}

/** The Temporal server on PostgreSQL (schemas, namespace and search attributes set up), then its UI. */
async function startTemporal(c: Cluster, databaseUrl: string, logger: Logger) {
  const { config, settings, layout, logs, processes } = c;
  const binaries = await resolveTemporalBinaries(say);
  const temporalEnv = temporalServerEnv(databaseUrl, layout.temporal, settings.temporalDb);
  await setUpTemporalSchemas(binaries, temporalEnv);
  say(`Temporal schemas set up in ${settings.temporalDb.db} and ${settings.temporalDb.visibilityDb}`);
  processes.push(supervise({
    name: 'temporal', command: binaries.server, args: temporalServerArgs(), env: { ...process.env, ...temporalEnv },
    logFile: path.join(logs, 'temporal.log'), log: say,
  }));
  await waitFor(() => temporalServing(layout.temporalAddress), 120_000, 'the Temporal server', c.shuttingDown);
  await ensureNamespace(layout.temporalAddress, config.temporal.namespace, logger);
  say(`Temporal server ${layout.temporalAddress}, namespace ${config.temporal.namespace} with Cairn's search attributes`);
  const ui = await temporalUiCommand(binaries, { temporalAddress: layout.temporalAddress, port: layout.temporalUi });
  processes.push(supervise({
    name: 'temporal-ui', command: ui.command, args: ui.args, env: { ...process.env, ...ui.env },
    logFile: path.join(logs, 'temporal-ui.log'), log: say,
  }));
}

/** The API and worker processes; returns the names of the workers polling their task queues so far. */
function startCairn(c: Cluster, apis: ApiSlot[], databaseUrl: string, publicBaseUrl: string): Set<string> {
  const { config, settings, layout, processes } = c;
  // docker-compose.yml's api and worker environment.
  const cairnEnv = {
    ...process.env,
    DATA_DIR: config.dataDir,
    DATABASE_URL: databaseUrl,
    TEMPORAL_ADDRESS: layout.temporalAddress,
    TEMPORAL_NAMESPACE: config.temporal.namespace,
    TEMPORAL_TASK_QUEUE: config.temporal.taskQueue,
    LOG_LEVEL: config.logLevel,
    CAIRN_SUPERVISOR_PID: String(process.pid),
  };
  for (const api of apis) {
    processes.push(supervise({
      name: api.name, command: process.execPath, args: [script('api')], log: say,
      env: {
        ...cairnEnv, HOST: '127.0.0.1', PORT: String(api.api), MCP_PORT: String(api.mcp),
        PUBLIC_BASE_URL: publicBaseUrl, MCP_PUBLIC_URL: process.env.MCP_PUBLIC_URL ?? `http://127.0.0.1:${layout.balancer.mcp}/`,
        // Every API migrates at start-up, under the migration lock (both at once here, like replicas).
        MIGRATE_ON_START: 'true', TRUST_PROXY: process.env.TRUST_PROXY ?? 'loopback',
      },
    }));
  }
  // Workers say when they poll their task queues (after bundling the workflow code).
  const polling = new Set<string>();
  for (let i = 0; i < settings.workers; i++) {
    const name = `worker-${i + 1}`;
    processes.push(supervise({
      name, command: process.execPath, args: [script('worker')], log: say,
      env: { ...cairnEnv, WORKER_METRICS_PORT: String(layout.workerMetrics(i)) },
      onMessage: (m) => void (m === 'ready' && polling.add(name)),
    }));
  }
  return polling;
}

/** The APIs whose /readyz answers 200, checked every half second: the balancers send requests only to them. */
function checkHealth(apis: ApiSlot[]): { names: Set<string>; timer: NodeJS.Timeout } {
  const names = new Set<string>();
  const timer = setInterval(() => {
    for (const api of apis) {
      void fetch(`http://127.0.0.1:${api.api}/readyz`, { signal: AbortSignal.timeout(2000) }).then(
        (r) => (r.ok ? names.add(api.name) : names.delete(api.name)),
        () => names.delete(api.name),
      );
    }
  }, 500);
  return { names, timer };
}
