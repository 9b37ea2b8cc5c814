// Search attributes of Cairn's workflows (issue 24), registered on the Temporal namespace by the worker
// at start (and by `npm start` and the test setup on the dev server). In the Temporal UI:
// `CairnAccount = "<account id>"`, `CairnAccounts = "<account id>"` (memory batches), `CairnStatus = "failed"`, `WorkflowId = "memory-batch-<batch id>"` (the
// batch of a memory event: `npm run admin -- memory event --id <event id>`).
// Workflow-safe: it imports only @temporalio/common.
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The account whose work this is (one account per execution; a memory batch has CairnAccounts). */
export const CAIRN_ACCOUNT = defineSearchAttributeKey('CairnAccount', SearchAttributeType.KEYWORD);
/**
 * A memory batch's accounts (`CairnAccounts = "<account id>"` finds the batches that held its events),
 * set when the batch ends; at most MAX_BATCH_ACCOUNTS of them (the server caps a value at 2 KB).
 */
export const CAIRN_ACCOUNTS = defineSearchAttributeKey('CairnAccounts', SearchAttributeType.KEYWORD_LIST);
export const MAX_BATCH_ACCOUNTS = 40;
/** ingest-url, ingest-file, source-deletion, account-deletion, memory-batch. */
export const CAIRN_KIND = defineSearchAttributeKey('CairnKind', SearchAttributeType.KEYWORD);
/** The content type of an ingest job's document, once known. */
export const CAIRN_CONTENT_TYPE = defineSearchAttributeKey('CairnContentType', SearchAttributeType.KEYWORD);
/** The final status of the job or batch: succeeded, quarantined or failed (a batch with a failed event is failed). */
export const CAIRN_STATUS = defineSearchAttributeKey('CairnStatus', SearchAttributeType.KEYWORD);

export const CAIRN_SEARCH_ATTRIBUTES = [CAIRN_ACCOUNT, CAIRN_ACCOUNTS, CAIRN_KIND, CAIRN_CONTENT_TYPE, CAIRN_STATUS] as const;
