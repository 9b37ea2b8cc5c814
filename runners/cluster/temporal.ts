import { execFile } from 'node:child_process';
import { access, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common';
import { ActionableError } from '../../platform/entrypoint.ts';
import type { Logger } from '../../platform/logger.ts';
import { goBinary, goInstall, isExecutable } from '../temporal-server/cli.ts';
import { DYNAMIC_CONFIG_FILE } from '../temporal-server/dev-server.ts';
import { ensureSearchAttributes } from '../../temporal/worker.ts';
import { CAIRN_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.ts';

const execFileAsync = promisify(execFile);

/**
 * The Temporal server Cairn runs in production (docker-compose.yml's images have the same versions):
 * the server the Temporal CLI v1.5.1 embeds, and the Web UI server that CLI embeds.
 */
export const TEMPORAL_SERVER_VERSION = 'v1.29.1';
export const TEMPORAL_UI_VERSION = 'v2.42.1';
const SERVER_PACKAGES = ['go.temporal.io/server/cmd/server', 'go.temporal.io/server/cmd/tools/sql'].map((p) => `${p}@${TEMPORAL_SERVER_VERSION}`);
const UI_MODULE = 'github.com/temporalio/ui-server/v2';

export const DEPLOY_DIR = fileURLToPath(new URL('../../deploy/temporal/', import.meta.url));

export type TemporalBinaries = { server: string; sqlTool: string; ui: string; uiRoot: string };

/** Where the binaries of this version are built and found: $XDG_CACHE_HOME/cairn (default ~/.cache/cairn). */
export function temporalBinaryPaths(): TemporalBinaries {
  const cache = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'cairn');
  const serverDir = path.join(cache, `temporal-server-${TEMPORAL_SERVER_VERSION}`);
  const uiRoot = path.join(cache, `temporal-ui-${TEMPORAL_UI_VERSION}`);
  return { server: path.join(serverDir, 'server'), sqlTool: path.join(serverDir, 'sql'), ui: path.join(uiRoot, 'server'), uiRoot };
}

/**
 * The server, its SQL tool and the UI server, built once with `go install` (like the Temporal CLI,
 * runners/temporal-server/cli.ts; a few minutes for the server) into a cache directory per version:
 * $XDG_CACHE_HOME/cairn (default ~/.cache/cairn). The UI server's config template (the one the
 * temporalio/ui image uses) is copied next to it from the module.
 */
export async function resolveTemporalBinaries(log: (message: string) => void): Promise<TemporalBinaries> {
  const found = temporalBinaryPaths();
  const { uiRoot } = found;
  const serverDir = path.dirname(found.server);
  const missingServer = !(await isExecutable(found.server)) || !(await isExecutable(found.sqlTool));
  const uiConfig = path.join(uiRoot, 'config', 'docker.yaml');
  const missingUi = !(await isExecutable(found.ui)) || !(await access(uiConfig).then(() => true, () => false));
  if (!missingServer && !missingUi) return found;

  const go = await goBinary();
  if (!go) throw new ActionableError(`The Temporal server ${TEMPORAL_SERVER_VERSION} is not built in ${serverDir} and Go is not installed: install Go (https://go.dev/dl) and run npm run cluster again.`);
  if (missingServer) {
    log(`building the Temporal server ${TEMPORAL_SERVER_VERSION} and its SQL tool once into ${serverDir} (a few minutes)...`);
    await goInstall(go, SERVER_PACKAGES, serverDir);
  }
  if (missingUi) {
    log(`building the Temporal UI server ${TEMPORAL_UI_VERSION} once into ${uiRoot}...`);
    await goInstall(go, [`${UI_MODULE}/cmd/server@${TEMPORAL_UI_VERSION}`], uiRoot);
    const { stdout } = await execFileAsync(go, ['env', 'GOMODCACHE']);
    await mkdir(path.dirname(uiConfig), { recursive: true });
    await copyFile(path.join(stdout.trim(), `${UI_MODULE}@${TEMPORAL_UI_VERSION}`, 'config', 'docker.yaml'), uiConfig);
  }
  return found;
}

/**
 * How to run the UI server: the temporalio/ui image's config template with `host: 127.0.0.1` added
 * (written next to it as config/cairn.yaml), so it listens on loopback only; without a host it listens
 * on every interface. Its variables are the image's (docker-compose.yml's temporal-ui service).
 */
export async function temporalUiCommand(binaries: TemporalBinaries, opts: { temporalAddress: string; port: number }) {
  const config = path.join(binaries.uiRoot, 'config');
  const template = await readFile(path.join(config, 'docker.yaml'), 'utf8');
  await writeFile(path.join(config, 'cairn.yaml'), `${template.replace(/^host:.*$/m, '')}\nhost: 127.0.0.1\n`);
  return {
    command: binaries.ui,
    args: ['--root', binaries.uiRoot, '--config', 'config', '--env', 'cairn', 'start'],
    env: {
      TEMPORAL_ADDRESS: opts.temporalAddress, TEMPORAL_UI_PORT: String(opts.port),
      TEMPORAL_DISABLE_WRITE_ACTIONS: 'true', TEMPORAL_CORS_ORIGINS: `http://127.0.0.1:${opts.port}`,
    },
  };
}

/** The ports of the server's four services (gRPC and membership each) and the frontend's HTTP API. */
export type TemporalPorts = {
  frontend: number; frontendHttp: number; history: number; matching: number; worker: number;
  membership: { frontend: number; history: number; matching: number; worker: number };
};

/**
 * The environment of deploy/temporal/config/cairn.yaml and deploy/temporal/setup.sh, with the names
 * of docker-compose.yml's temporal service: the database from a postgres:// URL (Temporal's own two
 * databases, DBNAME and VISIBILITY_DBNAME, on the same server), the ports, the dynamic config file.
 */
export function temporalServerEnv(databaseUrl: string, ports: TemporalPorts, names: { db: string; visibilityDb: string }) {
  const url = new URL(databaseUrl);
  return {
    POSTGRES_SEEDS: url.hostname,
    DB_PORT: url.port || '5432',
    POSTGRES_USER: decodeURIComponent(url.username),
    POSTGRES_PWD: decodeURIComponent(url.password),
    DBNAME: names.db,
    VISIBILITY_DBNAME: names.visibilityDb,
    DYNAMIC_CONFIG_FILE_PATH: DYNAMIC_CONFIG_FILE,
    BIND_ON_IP: '127.0.0.1',
    FRONTEND_GRPC_PORT: String(ports.frontend),
    FRONTEND_HTTP_PORT: String(ports.frontendHttp),
    HISTORY_GRPC_PORT: String(ports.history),
    MATCHING_GRPC_PORT: String(ports.matching),
    WORKER_GRPC_PORT: String(ports.worker),
    FRONTEND_MEMBERSHIP_PORT: String(ports.membership.frontend),
    HISTORY_MEMBERSHIP_PORT: String(ports.membership.history),
    MATCHING_MEMBERSHIP_PORT: String(ports.membership.matching),
    WORKER_MEMBERSHIP_PORT: String(ports.membership.worker),
  };
}

/** The server's command line (its config file is deploy/temporal/config/cairn.yaml). */
export function temporalServerArgs(): string[] {
  return ['--root', DEPLOY_DIR, '--config', 'config', '--env', 'cairn', '--allow-no-auth', 'start'];
}

/** Temporal's schemas, set up (or brought up to date) by deploy/temporal/setup.sh with Temporal's SQL tool. */
export async function setUpTemporalSchemas(binaries: TemporalBinaries, env: Record<string, string>): Promise<void> {
  try {
    await execFileAsync('bash', [path.join(DEPLOY_DIR, 'setup.sh')], {
      env: { ...process.env, ...env, SQL_TOOL: binaries.sqlTool }, maxBuffer: 64 * 2 ** 20,
    });
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; message: string };
    throw new Error(`Temporal's schema setup failed: ${e.message}\n${e.stderr ?? ''}${e.stdout?.slice(-4000) ?? ''}`, { cause: err });
  }
}

const ALREADY_EXISTS = 6;

/**
 * The namespace (a real server has none but its system namespace) with Cairn's search attributes,
 * in the server's SQL visibility store. A new namespace reaches the frontend's registry within its
 * refresh interval (about 10 s), so this retries until the attributes are listed.
 */
export async function ensureNamespace(address: string, namespace: string, logger: Logger, timeoutMs = 90_000): Promise<void> {
  const connection = await Connection.connect({ address });
  try {
    try {
      await connection.workflowService.registerNamespace({
        namespace, workflowExecutionRetentionPeriod: msToTs('3 days'),
      });
      logger.info({ namespace }, 'registered the Temporal namespace');
    } catch (err) {
      if ((err as { code?: number }).code !== ALREADY_EXISTS) throw err;
    }
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const listed = await connection.operatorService.listSearchAttributes({ namespace }).catch(() => null);
      if (listed && CAIRN_SEARCH_ATTRIBUTES.every((k) => k.name in (listed.customAttributes ?? {}))) return;
      if (listed) await ensureSearchAttributes(connection, namespace, logger);
      if (Date.now() > deadline) throw new Error(`the namespace ${namespace} did not get Cairn's search attributes within ${timeoutMs / 1000}s`);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
  } finally {
    await connection.close();
  }
}
