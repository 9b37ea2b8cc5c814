import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkflowBundle } from '@temporalio/worker';
import type { Logger } from '../platform/logger.ts';
import { temporalLoggerFromPino } from './logging.ts';

const workflowsPath = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Bundles workflow code with webpack, here. Our sources use explicit `.ts` import specifiers (Node's
 * type stripping needs them); the bundler resolves those as plain files, and `.js` specifiers are
 * mapped to `.ts` for good measure (sdk-typescript#1185).
 */
export async function bundleWorkflowsHere(logger: Logger): Promise<WorkflowBundle> {
  return bundleWorkflowCode({
    workflowsPath,
    // webpack's report is noise at info level; keep it for debugging.
    logger: temporalLoggerFromPino(logger.child({ component: 'bundler' }, { level: 'warn' })),
    webpackConfigHook: (config) => {
      config.resolve = {
        ...config.resolve,
        extensionAlias: { '.js': ['.ts', '.js'] },
      };
      return config;
    },
  });
}

/**
 * The workflow bundle, made by a short-lived child process (./bundle-process.ts): a process that ran
 * webpack keeps about 135 MB more resident memory for good, which a worker would hold beside every
 * document it stores.
 */
export async function bundleWorkflows(): Promise<WorkflowBundle> {
  const child = fork(fileURLToPath(new URL('./bundle-process.ts', import.meta.url)), { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  return new Promise<WorkflowBundle>((resolve, reject) => {
    let code: string | undefined;
    child.once('message', (message) => {
      code = (message as { code: string }).code;
    });
    child.once('error', reject);
    child.once('exit', (exitCode, signal) => {
      if (code !== undefined && exitCode === 0) resolve({ code });
      else reject(new Error(`bundling the workflow code failed (${signal ?? `exit code ${exitCode}`})`));
    });
  });
}
