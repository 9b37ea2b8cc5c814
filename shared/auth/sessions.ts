import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../config.ts';
import { Account, BrowserSession } from '../db/entities/index.ts';
import { AppError, unauthorized, validationError } from '../errors.ts';
import { findAccountByEmail, normalizeEmail } from './accounts.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
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


/**
 * Changes the password of a signed-in account. The current password is required (a wrong one counts
 * as a failed sign-in of the account, so guessing it is throttled like signing in); every other
 * browser session and every CLI session of the account ends in the same transaction, so whoever held
 * the old password is signed out everywhere but here. API keys and connected MCP applications stay:
 * they are revoked on their own pages.
 */
export async function changePassword(
  em: EntityManager,
  auth: Config['auth'],
  input: { accountId: string; keepSessionId: string; currentPassword: string; newPassword: string },
): Promise<{ browserSessionsEnded: number; cliSessionsEnded: number }> {
  const account = await em.findOneOrFail(Account, { id: input.accountId });
  const key = `login:account:${account.emailNormalized}`;
  await assertNotThrottled(em, [{ key, max: auth.loginMaxFailuresPerAccount }], auth.loginThrottleWindowMs);
  if (!(await verifyPassword(account.passwordHash, input.currentPassword))) {
    await recordFailure(em, [key], auth.loginThrottleWindowMs);
    throw new AppError(403, 'forbidden', 'The current password is not correct.');
  }
  if (input.newPassword === input.currentPassword) throw validationError('newPassword: choose a password other than the current one.');
  const hash = await hashPassword(input.newPassword);
  return em.transactional(async (tx) => {
    const conn = tx.getConnection();
    await conn.execute('update account set password_hash = ? where id = ?', [hash, account.id]);
    const browser = await conn.execute(
      'update browser_session set ended_at = now() where account_id = ? and id <> ? and ended_at is null',
      [account.id, input.keepSessionId], 'run',
    );
    const cli = await conn.execute('update cli_session set revoked_at = now() where account_id = ? and revoked_at is null', [account.id], 'run');
    await clearFailures(tx, [key]);
    return {
      browserSessionsEnded: (browser as { affectedRows?: number }).affectedRows ?? 0,
      cliSessionsEnded: (cli as { affectedRows?: number }).affectedRows ?? 0,
    };
  });
}
