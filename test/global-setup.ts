import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TestProject } from 'vitest/node';
import { scratchPostgres, scratchTemporal } from './helpers/ephemeral.ts';
import { bundleWorkflows } from '../temporal/bundle.ts';
import { ensureConsoleBuilt } from '../api/console/build.ts';
import { ensureChromium } from './helpers/chromium.ts';
import { resolveTemporalBinaries } from '../runners/cluster/temporal.ts';

declare module 'vitest' {
  export interface ProvidedContext {
    /** A PostgreSQL URL with rights to create databases; files create their own database from it. */
    adminDatabaseUrl: string;
    temporalAddress: string;
    /** Workflow code bundled once per run (bundling per test is slow). */
    workflowBundlePath: string;
  }
}


const log = (m: string) => process.stderr.write(`[test setup] ${m}\n`);

export default async function setup(project: TestProject) {
  const tmp = await mkdtemp(path.join(os.tmpdir(), 'cairn-test-'));
  const cleanups: (() => Promise<unknown>)[] = [() => rm(tmp, { recursive: true, force: true })];

  try {
    // The API serves the built console; the browser tests drive it in Debian's Chromium.
    await ensureConsoleBuilt(log);
    await ensureChromium(log);
    // The cluster tests run `npm run cluster`'s real Temporal server: built once (about two minutes) and cached.
    await resolveTemporalBinaries(log);
    const db = await scratchPostgres(log, 'cairn-test-pg-');
    cleanups.push(db.stop);
    const temporal = await scratchTemporal(log);
    cleanups.push(temporal.stop);

    const bundle = await bundleWorkflows();
    const workflowBundlePath = path.join(tmp, 'workflow-bundle.js');
    await writeFile(workflowBundlePath, bundle.code);

    project.provide('adminDatabaseUrl', db.adminUrl);
    project.provide('temporalAddress', temporal.address);
    project.provide('workflowBundlePath', workflowBundlePath);
  } catch (err) {
    for (const c of cleanups.reverse()) await c().catch(() => {});
    throw err;
  }

  return async () => {
    for (const c of cleanups.reverse()) await c().catch((err: unknown) => log(`cleanup failed: ${String(err)}`));
  };
}
