// Throwaway infrastructure for the test suite and the benchmarks (not used by the service itself; it
// needs the devDependency @temporalio/testing): a free local port, a scratch PostgreSQL and a headless
// Temporal dev server, each honouring DATABASE_URL / TEMPORAL_ADDRESS when they are set.
import { randomInt } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { startEmbeddedPostgres } from '../../runners/postgres/embedded.ts';
import { resolveTemporalCli } from '../../runners/temporal-server/cli.ts';
import { DEV_SERVER_ARGS } from '../../runners/temporal-server/dev-server.ts';

/** Binds `port` on 127.0.0.1 and lets it go again: the port it got (`port` itself unless 0). */
function probe(port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as net.AddressInfo).port;
      server.close(() => resolve(bound));
    });
  });
}

/** Where the kernel's ephemeral ports (ip_local_port_range) begin; the lowest free port we hand out. */
const LOWEST = 20_000;
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return 0;
  }
}

/**
 * A port nothing listens on, below the kernel's ephemeral range. listen(0) hands out a port from that
 * range, which any outgoing connection on the machine may take before the caller binds it (seconds or
 * a minute later, as `npm start` does for its five ports); on a busy machine it happens. Random, so
 * concurrent runs rarely pick the same one; listen(0) where the range is unknown or starts too low.
 */
export async function freePort(): Promise<number> {
  const start = ephemeralStart();
  for (let tries = 0; start > LOWEST + 1000 && tries < 20; tries++) {
    const candidate = LOWEST + randomInt(start - LOWEST);
    // A port handed out before may not be bound yet (npm start binds its five ports one by one): it is
    // free to the probe, and two draws once gave the API and the Temporal server the same port.
    if (handedOut.has(candidate)) continue;
    const port = await probe(candidate).catch(() => undefined);
    if (port) return handOut(port);
  }
  return handOut(await probe(0));
}

/** Ports this process handed out: never twice. */
const handedOut = new Set<number>();
function handOut(port: number): number {
  handedOut.add(port);
  return port;
}

export type Scratch<T> = T & { source: 'env' | 'embedded'; stop(): Promise<void> };

/** DATABASE_URL when set, else an embedded PostgreSQL in a new temporary directory (removed on stop). */
export async function scratchPostgres(log: (m: string) => void, prefix = 'cairn-scratch-'): Promise<Scratch<{ adminUrl: string }>> {
  if (process.env.DATABASE_URL) return { adminUrl: process.env.DATABASE_URL, source: 'env', stop: async () => {} };
  const tmp = await mkdtemp(path.join(os.tmpdir(), prefix));
  // As root, embedded PostgreSQL runs as a dedicated user that must be able to enter this directory.
  await chmod(tmp, 0o755);
  try {
    const db = await startEmbeddedPostgres({ dataDir: tmp, port: await freePort(), database: 'postgres', log });
    log('embedded PostgreSQL started');
    return {
      adminUrl: db.url,
      source: 'embedded',
      stop: async () => {
        await db.stop();
        await rm(tmp, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    throw err;
  }
}

/** TEMPORAL_ADDRESS when set, else the Temporal CLI's dev server, headless, on a free port. */
export async function scratchTemporal(log: (m: string) => void): Promise<Scratch<{ address: string }>> {
  if (process.env.TEMPORAL_ADDRESS) return { address: process.env.TEMPORAL_ADDRESS, source: 'env', stop: async () => {} };
  const cli = await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI, log });
  const env = await TestWorkflowEnvironment.createLocal({
    server: { executable: { type: 'existing-path', path: cli }, ip: '127.0.0.1', ui: false, extraArgs: DEV_SERVER_ARGS },
  });
  log(`Temporal dev server at ${env.address}`);
  return { address: env.address, source: 'embedded', stop: () => env.teardown() };
}
