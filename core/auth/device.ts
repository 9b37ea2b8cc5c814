import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { approvePending, deleteExpiredDevices, lockDevice, markConsumed, markPolled, revokeCliSession } from './device.queries.ts';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Config } from '../../platform/config.ts';
import { Account, CliDeviceAuthorization, CliSession } from '../../platform/db/entities/index.ts';
import { AppError } from '../../platform/errors.ts';
import { CLI_TOKEN_PREFIX } from '../contracts/auth.ts';
import { digest, newSecret, newUserCode, normalizeUserCode } from './tokens.ts';

/** The console page a person opens to approve a code; the code is prefilled from the link. */
export const verificationUrl = (publicBaseUrl: string, userCode: string) =>
  `${publicBaseUrl}/device?code=${encodeURIComponent(userCode)}`;

export async function createDeviceAuthorization(
  em: EntityManager,
  auth: Config['auth'],
  clientName: string | undefined,
) {
  // Housekeeping: codes a day past expiry are of no use to anyone.
  await deleteExpiredDevices(em);
  const deviceCode = newSecret();
  const now = new Date();
  for (let attempt = 0; ; attempt++) {
    const device = em.create(CliDeviceAuthorization, {
      id: randomUUID(),
      deviceCodeHash: digest(deviceCode),
      userCode: newUserCode(),
      clientName: clientName ?? null,
      status: 'pending',
      accountId: null,
      intervalSeconds: auth.devicePollIntervalSeconds,
      createdAt: now,
      expiresAt: new Date(now.getTime() + auth.deviceCodeTtlMs),
      lastPolledAt: null,
      approvedAt: null,
      consumedAt: null,
    });
    try {
      await em.flush();
      return { deviceCode, device };
    } catch (err) {
      // A user code collided with a live one (about 1 in 10^11): draw again.
      em.clear();
      if (!(err instanceof UniqueConstraintViolationException) || attempt >= 3) throw err;
    }
  }
}

export async function approveDevice(em: EntityManager, accountId: string, userCodeInput: string) {
  const userCode = normalizeUserCode(userCodeInput);
  const row = await approvePending(em, accountId, userCode);
  if (!row) {
    throw new AppError(404, 'not_found', 'No pending sign-in request has this code. It may have expired; start again from the CLI.');
  }
  return { userCode, expiresAt: new Date(row.expires_at) };
}

export type TokenPollResult =
  | { status: 'pending'; expiresAt: Date; intervalSeconds: number }
  | { status: 'issued'; token: string; session: CliSession; account: Account };

/**
 * One poll of the device flow. The first poll is always answered; a later poll sooner than
 * intervalSeconds after the previous one is told to slow down (RFC 8628 semantics). An approved code
 * is exchanged for a CLI session exactly once.
 */
export async function pollDeviceToken(
  em: EntityManager,
  auth: Config['auth'],
  deviceCode: string,
): Promise<TokenPollResult> {
  return em.transactional(async (tx) => {
    const row = await lockDevice(tx, digest(deviceCode));
    if (!row) throw new AppError(400, 'invalid_device_code', 'This device code is not known.');
    if (row.status === 'consumed') {
      throw new AppError(400, 'device_code_used', 'This device code was already exchanged for a session; sign in again.');
    }
    const expiresAt = new Date(row.expires_at);
    if (expiresAt.getTime() <= Date.now()) {
      throw new AppError(400, 'device_code_expired', 'This device code has expired; sign in again.');
    }
    if (row.status === 'pending') {
      const last = row.last_polled_at ? new Date(row.last_polled_at).getTime() : 0;
      const tooSoon = last > 0 && Date.now() - last < row.interval_seconds * 1000;
      await markPolled(tx, row.id);
      if (tooSoon) {
        throw new AppError(429, 'slow_down', `Polling too fast: wait ${row.interval_seconds} seconds between polls.`, {
          'retry-after': String(Math.max(1, row.interval_seconds)),
        });
      }
      return { status: 'pending', expiresAt, intervalSeconds: row.interval_seconds };
    }
    // Approved: issue the CLI session and consume the code in the same transaction.
    const account = await tx.findOneOrFail(Account, { id: row.account_id! });
    const token = newSecret(CLI_TOKEN_PREFIX);
    const now = new Date();
    const session = tx.create(CliSession, {
      id: randomUUID(),
      accountId: account.id,
      tokenHash: digest(token),
      clientName: row.client_name,
      createdAt: now,
      expiresAt: new Date(now.getTime() + auth.cliSessionLifetimeMs),
      lastUsedAt: null,
      revokedAt: null,
    });
    await markConsumed(tx, row.id);
    return { status: 'issued', token, session, account };
  });
}

export async function endCliSession(em: EntityManager, sessionId: string): Promise<void> {
  await revokeCliSession(em, sessionId);
}
