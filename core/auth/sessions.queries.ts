import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, changed, sql } from '../../platform/db/sql.ts';

// The statements of browser and CLI sessions and passwords (browser_session, cli_session, account);
// sign-in and password changes are in sessions.ts. Creating a session goes through its entity.

/** Ends the live browser session with this token digest; how many ended (0 or 1). */
export async function endBrowserSessionByDigest(em: EntityManager, tokenHash: string): Promise<number> {
  return changed(em, sql`update browser_session set ended_at = now() where token_hash = ${tokenHash} and ended_at is null`);
}

export async function setPasswordHash(tx: EntityManager, accountId: string, hash: string): Promise<void> {
  await bound(tx, sql`update account set password_hash = ${hash} where id = ${accountId}`);
}

/** Ends every live browser session of the account but `keepSessionId`; how many ended. */
export async function endOtherBrowserSessions(tx: EntityManager, accountId: string, keepSessionId: string): Promise<number> {
  return changed(tx, sql`update browser_session set ended_at = now() where account_id = ${accountId} and id <> ${keepSessionId} and ended_at is null`);
}

/** Revokes every live CLI session of the account; how many were revoked. */
export async function revokeCliSessionsOf(em: EntityManager, accountId: string): Promise<number> {
  return changed(em, sql`update cli_session set revoked_at = now() where account_id = ${accountId} and revoked_at is null`);
}
