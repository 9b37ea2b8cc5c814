import { randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { UniqueConstraintViolationException } from '@mikro-orm/core';
import type { Config } from '../../platform/config.ts';
import { Account } from '../../platform/db/entities/index.ts';
import { AppError } from '../../platform/errors.ts';
import { hashPassword } from './passwords.ts';

export type CreateAccountInput = {
  email: string;
  password: string;
  displayName?: string | null;
  monthlyCredits?: number;
  onboardingCredits?: number;
  queryDailyLimit?: number;
  ingestDailyLimit?: number;
  queryMonthlyLimit?: number;
  ingestMonthlyLimit?: number;
};

/** Emails are unique case-insensitively; the address is kept as typed for display. */
export const normalizeEmail = (email: string) => email.trim().toLowerCase();

export async function createAccount(
  em: EntityManager,
  defaults: Config['accountDefaults'],
  input: CreateAccountInput,
): Promise<Account> {
  const account = em.create(Account, {
    id: randomUUID(),
    email: input.email.trim(),
    emailNormalized: normalizeEmail(input.email),
    passwordHash: await hashPassword(input.password),
    displayName: input.displayName ?? null,
    state: 'active',
    disabledAt: null,
    linkedProviders: { google: false, github: false },
    monthlyCredits: input.monthlyCredits ?? defaults.monthlyCredits,
    onboardingCredits: input.onboardingCredits ?? defaults.onboardingCredits,
    queryDailyLimit: input.queryDailyLimit ?? defaults.queryDailyLimit,
    ingestDailyLimit: input.ingestDailyLimit ?? defaults.ingestDailyLimit,
    queryMonthlyLimit: input.queryMonthlyLimit ?? defaults.queryMonthlyLimit,
    ingestMonthlyLimit: input.ingestMonthlyLimit ?? defaults.ingestMonthlyLimit,
  });
  try {
    await em.flush();
  } catch (err) {
    if (err instanceof UniqueConstraintViolationException) {
      throw new AppError(409, 'account_exists', 'An account with this email already exists.');
    }
    throw err;
  }
  return account;
}

export async function findAccountByEmail(em: EntityManager, email: string): Promise<Account | null> {
  return em.findOne(Account, { emailNormalized: normalizeEmail(email) });
}

/** The account with this id (a principal's own, so it exists). */
export async function getAccount(em: EntityManager, id: string): Promise<Account> {
  return em.findOneOrFail(Account, { id });
}

/** A disabled account cannot sign in and none of its credentials authenticate. */
export async function disableAccount(em: EntityManager, email: string): Promise<Account> {
  const account = await findAccountByEmail(em, email);
  if (!account) throw new AppError(404, 'not_found', `No account ${email}.`);
  account.disabledAt ??= new Date();
  await em.flush();
  return account;
}

export function accountSummary(a: Account) {
  return {
    id: a.id,
    email: a.email,
    displayName: a.displayName ?? null,
    state: a.state,
    disabled: a.disabledAt != null,
    monthlyCredits: a.monthlyCredits,
    onboardingCredits: a.onboardingCredits,
    queryDailyLimit: a.queryDailyLimit,
    ingestDailyLimit: a.ingestDailyLimit,
    queryMonthlyLimit: a.queryMonthlyLimit,
    ingestMonthlyLimit: a.ingestMonthlyLimit,
    createdAt: a.createdAt.toISOString(),
  };
}

export const LOCAL_ACCOUNT_EMAIL = 'owner@cairn.local';

/**
 * On an empty database, `npm start` creates one local account so a newcomer can sign in at once. The
 * generated password is returned to be printed once; only its argon2 hash is stored.
 */
export async function createLocalAccountIfEmpty(
  em: EntityManager,
  defaults: Config['accountDefaults'],
): Promise<{ email: string; password: string } | null> {
  if ((await em.count(Account, {})) > 0) return null;
  const password = randomBytes(18).toString('base64url'); // 24 characters
  await createAccount(em, defaults, { email: LOCAL_ACCOUNT_EMAIL, password, displayName: 'Local owner' });
  return { email: LOCAL_ACCOUNT_EMAIL, password };
}
