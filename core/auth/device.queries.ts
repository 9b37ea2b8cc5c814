import type { EntityManager } from '@mikro-orm/postgresql';
import { bound, sql } from '../../platform/db/sql.ts';

// The device flow's statements (cli_device_authorization, cli_session); the flow is in device.ts.

/** Housekeeping: codes a day past expiry are of no use to anyone. */
export async function deleteExpiredDevices(em: EntityManager): Promise<void> {
  await bound(em, sql`delete from cli_device_authorization where expires_at < now() - interval '1 day'`);
}

/** Approves the pending, unexpired code for the account; undefined when there is none. */
export async function approvePending(em: EntityManager, accountId: string, userCode: string) {
  const [row] = await bound<{ id: string; expires_at: Date }>(em, sql`update cli_device_authorization
    set status = 'approved', account_id = ${accountId}, approved_at = now()
    where user_code = ${userCode} and status = 'pending' and expires_at > now()
    returning id, expires_at`);
  return row;
}

/** The device code's authorization, locked for update. */
export async function lockDevice(tx: EntityManager, deviceCodeHash: string) {
  const [row] = await bound<{
    id: string; status: string; account_id: string | null; client_name: string | null;
    expires_at: Date; last_polled_at: Date | null; interval_seconds: number;
  }>(tx, sql`select id, status, account_id, client_name, expires_at, last_polled_at, interval_seconds
    from cli_device_authorization where device_code_hash = ${deviceCodeHash} for update`);
  return row;
}

export async function markPolled(tx: EntityManager, id: string): Promise<void> {
  await bound(tx, sql`update cli_device_authorization set last_polled_at = now() where id = ${id}`);
}

export async function markConsumed(tx: EntityManager, id: string): Promise<void> {
  await bound(tx, sql`update cli_device_authorization set status = 'consumed', consumed_at = now(), last_polled_at = now() where id = ${id}`);
}

export async function revokeCliSession(em: EntityManager, sessionId: string): Promise<void> {
  await bound(em, sql`update cli_session set revoked_at = now() where id = ${sessionId} and revoked_at is null`);
}
