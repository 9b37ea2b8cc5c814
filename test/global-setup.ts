import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { TestWorkflowEnvironment } from '@temporalio/testing';
import type { TestProject } from 'vitest/node';
import { startEmbeddedPostgres } from '../shared/db/embedded.ts';
import { resolveTemporalCli } from '../shared/temporal/cli.ts';
import { createLogger } from '../shared/logger.ts';
import { bundleWorkflows } from '../shared/temporal/worker.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL URL with rights to create databases; files create their own database from it. */
    adminDatabaseUrl: string;
    temporalAddress: string;
    /** Workflow code bundled once per run (bundling per test is slow). */
    workflowBundlePath: string;
  }
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

const log = (m: string) => process.stderr.write(`[test setup] ${m}\n`);

export default async function setup(project: TestProject) {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cairn-test-'));
  // As root, embedded PostgreSQL runs as a dedicated user that must be able to enter this directory.
  await chmod(tmp, 0o755);
  const cleanups: (() => Promise<unknown>)[] = [() => rm(tmp, { recursive: true, force: true })];

  try {
    let adminDatabaseUrl = process.env.DATABASE_URL;
    if (!adminDatabaseUrl) {
      const db = await startEmbeddedPostgres({ dataDir: tmp, port: await freePort(), database: 'postgres', log });
      cleanups.push(db.stop);
      adminDatabaseUrl = db.url;
      log('embedded PostgreSQL started');
    }

    let temporalAddress = process.env.TEMPORAL_ADDRESS;
    if (!temporalAddress) {
      const cli = await resolveTemporalCli({ configured: process.env.TEMPORAL_CLI, log });
      const env = await TestWorkflowEnvironment.createLocal({
        server: { executable: { type: 'existing-path', path: cli }, ip: '127.0.0.1', ui: false },
      });
      cleanups.push(() => env.teardown());
      temporalAddress = env.address;
      log(`Temporal dev server at ${temporalAddress}`);
    }

    const bundle = await bundleWorkflows(createLogger({ logLevel: 'warn' }));
    const workflowBundlePath = path.join(tmp, 'workflow-bundle.js');
    await writeFile(workflowBundlePath, bundle.code);

    project.provide('adminDatabaseUrl', adminDatabaseUrl);
    project.provide('temporalAddress', temporalAddress);
    project.provide('workflowBundlePath', workflowBundlePath);
  } catch (err) {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    throw err;
  }

  return async () => {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log(`cleanup failed: ${String(err)}`));
  };
}
