import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// Account deletion's statements (every table an account owns); the steps are in account-deletion.ts.

/** Tables with an `account_id` whose rows go with the account. */
export type OwnedTable =
  | 'api_key' | 'cli_session' | 'cli_device_authorization' | 'ingest_job' | 'record_lexicon' | 'ocr_page' | 'provider_preview'
  | 'oauth_payload' | 'oauth_connected_app' | 'memory_peer' | 'memory_session' | 'memory_event'
  | 'credit_reservation' | 'credit_ledger' | 'credit_balance' | 'quota_usage';

export async function markAccountDeletionPending(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, sql`update account set state = 'deletion_pending', updated_at = now() where id = ${accountId}`);
}

export async function revokeApiKeysOf(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, sql`update api_key set revoked_at = now() where account_id = ${accountId} and revoked_at is null`);
}

export async function revokeConnectedAppsOf(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, sql`update oauth_connected_app set revoked_at = now() where account_id = ${accountId} and revoked_at is null`);
}

export async function deleteOwnedRows(em: EntityManager, table: OwnedTable, accountId: string): Promise<void> {
  await bound(em, sql`delete from ${sql.raw(table)} where account_id = ${accountId}`);
}

/** The request-rate window of one key (table rate_limit, written by the rate limiter's library). */
export async function deleteRateWindow(em: EntityManager, key: string): Promise<void> {
  await bound(em, sql`delete from rate_limit where key = ${key}`);
}

/** Deletes the account row; its browser sessions go with it (foreign key cascade). */
export async function deleteAccountRow(em: EntityManager, accountId: string): Promise<void> {
  await bound(em, sql`delete from account where id = ${accountId}`);
}
