// Every workflow the worker serves. Workflow code is deterministic: activities are imported as types
// only, and nothing here may import node:*, the database, the logger or API code (lint enforces it).
export { selfCheckWorkflow } from './self-check.workflow.ts';
export { accountDeletionWorkflow } from './account-deletion.workflow.ts';
export { creditSettlementSweeperWorkflow } from './credit-settlement.workflow.ts';
export { ingestWorkflow, sourceDeletionWorkflow } from './ingest.workflow.ts';
export { memoryBatchWorkflow } from './memory-batch.workflow.ts';
