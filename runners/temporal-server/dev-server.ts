import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { parse } from 'yaml';
import { Connection } from '@temporalio/client';
import { answersOk } from '../../platform/entrypoint.ts';
import { CAIRN_SEARCH_ATTRIBUTES } from '../../workflows/search-attributes.ts';

const CLI_TYPE = { KEYWORD: 'Keyword', KEYWORD_LIST: 'KeywordList' } as const;

/** Cairn's dynamic config for Temporal, one file for the dev server and the real server (npm run cluster, docker-compose.yml). */
export const DYNAMIC_CONFIG_FILE = fileURLToPath(new URL('../../deploy/temporal/dynamicconfig.yaml', import.meta.url));

/** The file's settings as dev server flags (the dev server takes values, not a file). */
function dynamicConfigArgs(file: string): string[] {
  const settings = parse(readFileSync(file, 'utf8')) as Record<string, { value: unknown }[]>;
  return Object.entries(settings).flatMap(([key, [setting]]) => ['--dynamic-config-value', `${key}=${JSON.stringify(setting!.value)}`]);
}

/**
 * What Cairn needs of a dev server beyond its defaults (tests and benchmarks pass the same): the dynamic
 * config the real server reads too (task queue fairness, one partition per task queue), and Cairn's
 * search attributes.
 */
export const DEV_SERVER_ARGS = [
  ...dynamicConfigArgs(DYNAMIC_CONFIG_FILE),
  ...CAIRN_SEARCH_ATTRIBUTES.flatMap((k) => ['--search-attribute', `${k.name}=${CLI_TYPE[k.type as keyof typeof CLI_TYPE]}`]),
];

export type DevServerOptions = {
  cli: string;
  /** SQLite file that keeps workflow history across restarts. */
  dbFile: string;
  ip: string;
  port: number;
  uiPort: number;
  namespace: string;
  log?: (message: string) => void;
  readyTimeoutMs?: number;
};

export type DevServer = { address: string; uiUrl: string; process: ChildProcess; stop(): Promise<void> };

/** Runs the real Temporal server (`temporal server start-dev`) with its Web UI, and waits until it serves. */
export async function startTemporalDevServer(opts: DevServerOptions): Promise<DevServer> {
  await mkdir(path.dirname(opts.dbFile), { recursive: true });
  const args = [
    'server', 'start-dev',
    '--db-filename', opts.dbFile,
    '--ip', opts.ip,
    '--port', String(opts.port),
    '--ui-port', String(opts.uiPort),
    '--log-level', 'warn',
    // SQLite's defaults (rollback journal, a full sync per commit) make every workflow step several
    // fsyncs. WAL with synchronous=normal survives a crash of the server process (a power loss may lose
    // the last commits); a production deployment uses a real Temporal cluster instead.
    '--sqlite-pragma', 'journal_mode=wal',
    '--sqlite-pragma', 'synchronous=normal',
    ...DEV_SERVER_ARGS,
  ];
  if (opts.namespace !== 'default') args.push('--namespace', opts.namespace);
  const child = spawn(opts.cli, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const output: string[] = [];
  const keep = (chunk: Buffer) => {
    output.push(chunk.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);

  let exited: number | null | undefined;
  child.on('exit', (code) => (exited = code));
  const address = `${opts.ip}:${opts.port}`;
  const uiUrl = `http://${opts.ip}:${opts.uiPort}`;

  const stop = async () => {
    if (exited !== undefined) return;
    const done = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill('SIGTERM');
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await done;
    clearTimeout(timer);
  };

  const deadline = Date.now() + (opts.readyTimeoutMs ?? 60_000);
  for (;;) {
    if (exited !== undefined) {
      throw new Error(`temporal server start-dev exited with code ${exited}:\n${output.join('')}`);
    }
    // Serving means both: the frontend answers its health check and the Web UI (started after it) answers.
    if ((await temporalServing(address)) && (await answersOk(uiUrl))) return { address, uiUrl, process: child, stop };
    if (Date.now() > deadline) {
      await stop();
      throw new Error(`Temporal dev server did not become ready at ${address}:\n${output.join('')}`);
    }
    await sleep(250);
  }
}

/** Whether the Temporal frontend at `address` answers its health check with SERVING. */
export async function temporalServing(address: string): Promise<boolean> {
  try {
    const conn = await Connection.connect({ address, connectTimeout: '1s' });
    try {
      return (await conn.healthService.check({})).status === 1;
    } finally {
      await conn.close();
    }
  } catch {
    return false; // not up yet
  }
}
