import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { Account, BrowserSession } from '../db/entities/index.ts';
import { unauthorized } from '../errors.ts';
import { findAccountByEmail, normalizeEmail } from './accounts.ts';
import { verifyPassword } from './passwords.ts';
import { assertNotThrottled, clearFailures, recordFailure } from './throttle.ts';
import { digest, newSecret } from './tokens.ts';

export type LoginResult = { token: string; session: BrowserSession; account: Account };

/**
 * Email + password sign-in. Unknown email, wrong password and disabled account all answer the same 401
 * after the same argon2 work; failures are counted per account and per client address.
 */
export async function login(
  em: EntityManager,
  auth: Config['auth'],
  input: { email: string; password: string; clientAddress: string },
): Promise<LoginResult> {
  const throttleKeys = { account: `login:account:${normalizeEmail(input.email)}`, address: `login:addr:${input.clientAddress}` };
  await assertNotThrottled(
    em,
    [
      { key: throttleKeys.account, max: auth.loginMaxFailuresPerAccount },
      { key: throttleKeys.address, max: auth.loginMaxFailuresPerAddress },
    ],
    auth.loginThrottleWindowMs,
  );
  const account = await findAccountByEmail(em, input.email);
  const passwordOk = await verifyPassword(account?.passwordHash, input.password);
  if (!account || !passwordOk || account.disabledAt) {
    await recordFailure(em, [throttleKeys.account, throttleKeys.address], auth.loginThrottleWindowMs);
    throw unauthorized('Email or password is incorrect.');
  }
  await clearFailures(em, [throttleKeys.account]);
  const token = newSecret();
  const now = new Date();
  const session = em.create(BrowserSession, {
    id: randomUUID(),
    accountId: account.id,
    tokenHash: digest(token),
    createdAt: now,
    expiresAt: new Date(now.getTime() + auth.sessionLifetimeMs),
    lastSeenAt: now,
    endedAt: null,
  });
  await em.flush();
  return { token, session, account };
}

/** Ends the session the token belongs to. Returns whether there was a live session. */
export async function endBrowserSession(em: EntityManager, token: string): Promise<boolean> {
  const res = await em
    .getConnection()
    .execute('update browser_session set ended_at = now() where token_hash = ? and ended_at is null', [digest(token)], 'run');
  return (res as { affectedRows?: number }).affectedRows! > 0;
}


export const sessionTimes = (s: { createdAt: Date; expiresAt: Date }) => ({
  issuedAt: s.createdAt.toISOString(),
  expiresAt: s.expiresAt.toISOString(),
});

