import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Config } from '../../platform/config.ts';
import { Account, BrowserSession } from '../../platform/db/entities/index.ts';
import { AppError, unauthorized, validationError } from '../../platform/errors.ts';
import { findAccountByEmail, getAccount, normalizeEmail } from './accounts.ts';
import { hashPassword, verifyPassword } from './passwords.ts';
import { endBrowserSessionByDigest, endOtherBrowserSessions, revokeCliSessionsOf, setPasswordHash } from './sessions.queries.ts';
import { claimAttempt, failedAttempt, releaseAttempt, type ThrottleRule } from './throttle.ts';
import { digest, newSecret } from './tokens.ts';

export type LoginResult = { token: string; session: BrowserSession; account: Account };

/**
 * The sign-in throttle's keys. An account is throttled per client address, so guessing from one address
 * never locks its owner out elsewhere: each (account, address) pair has `loginFreeFailures` attempts,
 * then waits that double (1 s, 2 s, 4 s, ...) up to `loginBackoffMaxMs`. One address that fails across
 * many accounts is stopped after `loginMaxFailuresPerAddress` failures for a window.
 */
function throttleRules(auth: Config['auth'], email: string, clientAddress: string): ThrottleRule[] {
  return [
    {
      key: `login:pair:${normalizeEmail(email)}:${clientAddress}`,
      free: auth.loginFreeFailures,
      wait: (excess) => Math.min(1000 * 2 ** Math.min(excess - 1, 30), auth.loginBackoffMaxMs),
    },
    { key: `login:addr:${clientAddress}`, free: auth.loginMaxFailuresPerAddress, wait: () => auth.loginThrottleWindowMs },
  ];
}

/**
 * Email + password sign-in. Unknown email, wrong password and disabled account all answer the same 401
 * after the same argon2 work. Every attempt is counted before the password is checked (atomic, see
 * throttle.ts); a successful one is taken back and clears its pair.
 */
export async function login(
  em: EntityManager,
  auth: Config['auth'],
  input: { email: string; password: string; clientAddress: string },
): Promise<LoginResult> {
  const rules = throttleRules(auth, input.email, input.clientAddress);
  const waits = await claimAttempt(em, rules, auth.loginThrottleWindowMs);
  const account = await findAccountByEmail(em, input.email);
  const passwordOk = await verifyPassword(account?.passwordHash, input.password);
  if (!account || !passwordOk || account.disabledAt) {
    await failedAttempt(em, waits);
    throw unauthorized('Email or password is incorrect.');
  }
  await releaseAttempt(em, rules, [rules[0]!.key]);
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
  return (await endBrowserSessionByDigest(em, digest(token))) > 0;
}

/** The browser session with this id (the caller's own, so it exists). */
export async function getBrowserSession(em: EntityManager, id: string): Promise<BrowserSession> {
  return em.findOneOrFail(BrowserSession, { id });
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
  input: { accountId: string; keepSessionId: string; currentPassword: string; newPassword: string; clientAddress: string },
): Promise<{ browserSessionsEnded: number; cliSessionsEnded: number }> {
  const account = await getAccount(em, input.accountId);
  // A wrong current password is a failed sign-in of this account from this address, throttled alike.
  const rules = throttleRules(auth, account.emailNormalized, input.clientAddress);
  const waits = await claimAttempt(em, rules, auth.loginThrottleWindowMs);
  if (!(await verifyPassword(account.passwordHash, input.currentPassword))) {
    await failedAttempt(em, waits);
    throw new AppError(403, 'forbidden', 'The current password is not correct.');
  }
  await releaseAttempt(em, rules, [rules[0]!.key]);
  if (input.newPassword === input.currentPassword) throw validationError('newPassword: choose a password other than the current one.');
  const hash = await hashPassword(input.newPassword);
  return em.transactional(async (tx) => {
    await setPasswordHash(tx, account.id, hash);
    const browserSessionsEnded = await endOtherBrowserSessions(tx, account.id, input.keepSessionId);
    const cliSessionsEnded = await revokeCliSessionsOf(tx, account.id);
    return { browserSessionsEnded, cliSessionsEnded };
  });
}
