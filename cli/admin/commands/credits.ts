import { randomUUID } from 'node:crypto';
import { z } from 'zod';
import { findAccountByEmail } from '../../../core/auth/accounts.ts';
import { Email } from '../../../core/contracts/auth.ts';
import { adjustCredits, getBalance, verifyLedger } from '../../../core/metering/ledger.ts';
import { changeLimits } from '../../../core/metering/limits.ts';
import { isoDate } from '../../../core/metering/periods.ts';
import type { AdminContext } from '../context.ts';
import { parseFlags, UsageError, type AdminCommand } from '../registry.ts';

const str = { type: 'string' } as const;
const signed = z.coerce.number().int().min(-1_000_000_000).max(1_000_000_000);
const count = z.coerce.number().int().min(0).max(1_000_000_000);


async function accountId(ctx: AdminContext, email: string): Promise<string> {
  const account = await findAccountByEmail(ctx.orm.em.fork(), email);
  if (!account) throw new UsageError(`No account ${email}.`);
  return account.id;
}

const balanceJson = (b: Awaited<ReturnType<typeof getBalance>>) => ({
  monthlyRemaining: b.monthly,
  onboardingRemaining: b.onboarding,
  totalRemaining: b.monthly + b.onboarding,
  periodStart: isoDate(b.periodStart),
});

export const creditsGrantCommand: AdminCommand = {
  name: 'credits grant',
  summary: 'Add (or with a negative number remove) monthly or onboarding credits; one ledger row.',
  usage: 'credits grant --email E [--monthly N] [--onboarding N] --reason TEXT [--key IDEMPOTENCY_KEY]',
  options: { email: str, monthly: str, onboarding: str, reason: str, key: str },
  async run(ctx, args) {
    const a = parseFlags(
      z.object({
        email: Email,
        monthly: signed.default(0),
        onboarding: signed.default(0),
        reason: z.string().min(1).max(500),
        key: z.string().min(1).max(100).optional(),
      }),
      args,
    );
    if (a.monthly === 0 && a.onboarding === 0) throw new UsageError('Give --monthly and/or --onboarding.');
    const id = await accountId(ctx, a.email);
    const b = await adjustCredits(ctx.orm.em.fork(), id, {
      key: a.key ?? randomUUID(),
      monthly: a.monthly,
      onboarding: a.onboarding,
      reason: a.reason,
    });
    ctx.out({ email: a.email, ...balanceJson(b) });
  },
};

export const creditsShowCommand: AdminCommand = {
  name: 'credits show',
  summary: 'Show the balance and check that it equals the sum of the ledger.',
  usage: 'credits show --email E',
  options: { email: str },
  async run(ctx, args) {
    const { email } = parseFlags(z.object({ email: Email }), args);
    const id = await accountId(ctx, email);
    const b = await getBalance(ctx.orm.em.fork(), id);
    const check = await verifyLedger(ctx.orm.em.fork(), id);
    ctx.out({ email, ...balanceJson(b), ledgerConsistent: check.ok });
  },
};

export const limitsSetCommand: AdminCommand = {
  name: 'limits set',
  summary: 'Change quota limits, the monthly allowance or the OCR preview budgets (pages); recorded as a ledger row.',
  usage:
    'limits set --email E [--query-daily-limit N] [--ingest-daily-limit N] [--query-monthly-limit N] ' +
    '[--ingest-monthly-limit N] [--monthly-credits N] [--ocr-preview-max-pages N] [--ocr-preview-daily-pages N]',
  options: {
    email: str, 'query-daily-limit': str, 'ingest-daily-limit': str, 'query-monthly-limit': str,
    'ingest-monthly-limit': str, 'monthly-credits': str, 'ocr-preview-max-pages': str, 'ocr-preview-daily-pages': str,
  },
  async run(ctx, args) {
    const a = parseFlags(
      z.object({
        email: Email,
        'query-daily-limit': count.optional(),
        'ingest-daily-limit': count.optional(),
        'query-monthly-limit': count.optional(),
        'ingest-monthly-limit': count.optional(),
        'monthly-credits': count.optional(),
        'ocr-preview-max-pages': count.optional(),
        'ocr-preview-daily-pages': count.optional(),
      }),
      args,
    );
    const id = await accountId(ctx, a.email);
    const changes = {
      queryDailyLimit: a['query-daily-limit'],
      ingestDailyLimit: a['ingest-daily-limit'],
      queryMonthlyLimit: a['query-monthly-limit'],
      ingestMonthlyLimit: a['ingest-monthly-limit'],
      monthlyCredits: a['monthly-credits'],
      ocrPreviewMaxPages: a['ocr-preview-max-pages'],
      ocrPreviewDailyPages: a['ocr-preview-daily-pages'],
    };
    if (Object.values(changes).every((v) => v === undefined)) throw new UsageError('Give at least one limit to change.');
    await changeLimits(ctx.orm.em.fork(), id, changes, randomUUID());
    ctx.out({ email: a.email, changed: Object.fromEntries(Object.entries(changes).filter(([, v]) => v !== undefined)) });
  },
};
