import type { EntityManager } from '@mikro-orm/postgresql';
import { bound } from '../db/sql.ts';

// The steps of account deletion, run by accountDeletionWorkflow's activities. Each is idempotent: a
// retry after a crash, or a retry of the whole deletion, finds the work done and does nothing.

/** Recovery-only from here on: credentials other than the browser session stop working. */
export async function markDeletionPending(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, `update account set state = 'deletion_pending', updated_at = now() where id = ?`, [accountId]);
}

/** API keys, CLI sessions and MCP OAuth connections stop working and pending device codes are dropped. */
export async function revokeAccountCredentials(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, 'update api_key set revoked_at = now() where account_id = ? and revoked_at is null', [accountId]);
  await bound(em, 'update cli_session set revoked_at = now() where account_id = ? and revoked_at is null', [accountId]);
  await bound(em, 'delete from cli_device_authorization where account_id = ?', [accountId]);
  await bound(em, 'update oauth_connected_app set revoked_at = now() where account_id = ? and revoked_at is null', [accountId]);
  await bound(em, 'delete from oauth_payload where account_id = ?', [accountId]);
}

/**
 * Removes everything the account owns except the account row and its browser sessions (which the
 * pending-deletion session needs to retry). Tables are added here as features that own data land.
 */
export async function purgeAccountData(em: EntityManager, accountId: string): Promise<void> {
  await em.transactional(async (tx) => {
    await bound(tx, 'delete from api_key where account_id = ?', [accountId]);
    await bound(tx, 'delete from cli_session where account_id = ?', [accountId]);
    await bound(tx, 'delete from ingest_job where account_id = ?', [accountId]);
    await bound(tx, 'delete from record_lexicon where account_id = ?', [accountId]);
    // OCR text of jobs and previews, and the previews (shared/ingest/ocr).
    for (const table of ['ocr_page', 'provider_preview']) await bound(tx, `delete from ${table} where account_id = ?`, [accountId]);
    await bound(tx, 'delete from oauth_payload where account_id = ?', [accountId]);
    await bound(tx, 'delete from oauth_connected_app where account_id = ?', [accountId]);
    // Native memory: peers and sessions take messages, claims and claim history with them; then the events.
    for (const table of ['memory_peer', 'memory_session', 'memory_event']) {
      await bound(tx, `delete from ${table} where account_id = ?`, [accountId]);
    }
    // Credit history goes with the account; the ledger's append-only trigger guards updates, not deletes.
    for (const table of ['credit_reservation', 'credit_ledger', 'credit_balance', 'quota_usage']) {
      await bound(tx, `delete from ${table} where account_id = ?`, [accountId]);
    }
    // The request-rate window is keyed by the account id (shared/metering/rate-limit.ts: keyPrefix 'account').
    await bound(tx, 'delete from rate_limit where key = ?', [`account:${accountId}`]);
  });
}

/** Deletes the account row; its browser sessions go with it (foreign key cascade). */
export async function finalizeAccountDeletion(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, 'delete from account where id = ?', [accountId]);
}
