import type { EntityManager } from '@mikro-orm/postgresql';
import {
  deleteAccountRow,
  deleteOwnedRows,
  deleteRateWindow,
  markAccountDeletionPending,
  revokeApiKeysOf,
  revokeConnectedAppsOf,
} from './account-deletion.queries.ts';
import { revokeCliSessionsOf } from './sessions.queries.ts';

// The steps of account deletion, run by accountDeletionWorkflow's activities. Each is idempotent: a
// retry after a crash, or a retry of the whole deletion, finds the work done and does nothing.

/** Recovery-only from here on: credentials other than the browser session stop working. */
export async function markDeletionPending(em: EntityManager, accountId: string): Promise<void> {
  await markAccountDeletionPending(em, accountId);
}

/** API keys, CLI sessions and MCP OAuth connections stop working and pending device codes are dropped. */
export async function revokeAccountCredentials(em: EntityManager, accountId: string): Promise<void> {
  await revokeApiKeysOf(em, accountId);
  await revokeCliSessionsOf(em, accountId);
  await deleteOwnedRows(em, 'cli_device_authorization', accountId);
  await revokeConnectedAppsOf(em, accountId);
  await deleteOwnedRows(em, 'oauth_payload', accountId);
}

/**
 * Removes everything the account owns except the account row and its browser sessions (which the
 * pending-deletion session needs to retry). Tables are added here as features that own data land.
 */
export async function purgeAccountData(em: EntityManager, accountId: string): Promise<void> {
  await em.transactional(async (tx) => {
    for (const table of [
      'api_key', 'cli_session', 'ingest_job', 'record_lexicon',
      // OCR text of jobs and previews, and the previews (core/ingest/ocr).
      'ocr_page', 'provider_preview',
      'oauth_payload', 'oauth_connected_app',
      // Native memory: peers and sessions take messages, claims and claim history with them; then the events.
      'memory_peer', 'memory_session', 'memory_event',
      // Credit history goes with the account; the ledger's append-only trigger guards updates, not deletes.
      'credit_reservation', 'credit_ledger', 'credit_balance', 'quota_usage',
    ] as const) {
      await deleteOwnedRows(tx, table, accountId);
    }
    // The request-rate window is keyed by the account id (core/metering/rate-limit.ts: keyPrefix 'account').
    await deleteRateWindow(tx, `account:${accountId}`);
  });
}

/** Deletes the account row; its browser sessions go with it (foreign key cascade). */
export async function finalizeAccountDeletion(em: EntityManager, accountId: string): Promise<void> {
  await deleteAccountRow(em, accountId);
}
