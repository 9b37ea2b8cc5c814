// The child process that bundles the workflow code for a worker (./bundle.ts, bundleWorkflows): it
// sends the bundle over its IPC channel and exits, taking webpack's memory with it.
import { createLogger } from '../platform/logger.ts';
import { bundleWorkflowsHere } from './bundle.ts';

const bundle = await bundleWorkflowsHere(createLogger({ logLevel: 'warn' }, { name: 'worker' }));
process.send!({ code: bundle.code }, undefined, {}, (err) => {
  if (err) throw err;
  process.disconnect!();
});
