import { z } from 'zod';
import { accountSummary, createAccount, disableAccount } from '../../../core/auth/accounts.ts';
import { Email } from '../../../core/contracts/auth.ts';
import { PASSWORD_MAX, PASSWORD_MIN } from '../../../core/contracts/auth.ts';
import { Account } from '../../../platform/db/entities/index.ts';
import { linkExternalIdentity } from '../../../core/oauth/external.ts';
import { parseFlags, UsageError, type AdminCommand } from '../registry.ts';

const count = z.coerce.number().int().min(0).max(1_000_000_000);
const CreateArgs = z.object({
  email: Email,
  password: z.string().min(PASSWORD_MIN).max(PASSWORD_MAX),
  'display-name': z.string().min(1).max(200).optional(),
  'monthly-credits': count.optional(),
  'onboarding-credits': count.optional(),
  'query-daily-limit': count.optional(),
  'ingest-daily-limit': count.optional(),
  'query-monthly-limit': count.optional(),
  'ingest-monthly-limit': count.optional(),
});


const str = { type: 'string' } as const;

export const accountCreateCommand: AdminCommand = {
  name: 'account create',
  summary: 'Create an account; prints it as JSON.',
  usage:
    'account create --email E --password P [--display-name N] [--monthly-credits N] [--onboarding-credits N] ' +
    '[--query-daily-limit N] [--ingest-daily-limit N] [--query-monthly-limit N] [--ingest-monthly-limit N]',
  options: {
    email: str, password: str, 'display-name': str, 'monthly-credits': str, 'onboarding-credits': str,
    'query-daily-limit': str, 'ingest-daily-limit': str, 'query-monthly-limit': str, 'ingest-monthly-limit': str,
  },
  async run(ctx, args) {
    const a = parseFlags(CreateArgs, args);
    const account = await createAccount(ctx.orm.em.fork(), ctx.config.accountDefaults, {
      email: a.email,
      password: a.password,
      displayName: a['display-name'] ?? null,
      monthlyCredits: a['monthly-credits'],
      onboardingCredits: a['onboarding-credits'],
      queryDailyLimit: a['query-daily-limit'],
      ingestDailyLimit: a['ingest-daily-limit'],
      queryMonthlyLimit: a['query-monthly-limit'],
      ingestMonthlyLimit: a['ingest-monthly-limit'],
    });
    ctx.out(accountSummary(account));
  },
};

export const accountListCommand: AdminCommand = {
  name: 'account list',
  summary: 'List accounts as JSON ({ accounts: [...] }).',
  usage: 'account list',
  options: {},
  async run(ctx) {
    const accounts = await ctx.orm.em.fork().find(Account, {}, { orderBy: { createdAt: 'asc' }, limit: 10_000 });
    ctx.out({ accounts: accounts.map(accountSummary) });
  },
};

export const accountDisableCommand: AdminCommand = {
  name: 'account disable',
  summary: 'Disable an account: it can no longer sign in and none of its credentials work.',
  usage: 'account disable --email E',
  options: { email: str },
  async run(ctx, args) {
    const { email } = parseFlags(z.object({ email: Email }), args);
    ctx.out(accountSummary(await disableAccount(ctx.orm.em.fork(), email)));
  },
};

export const accountLinkExternalCommand: AdminCommand = {
  name: 'account link-external',
  summary: "Link an external identity provider's subject (the tokens' sub) to an account, for MCP_AUTH_ISSUER providers that assert no verified email.",
  usage: 'account link-external --email E --subject SUB [--issuer URL (default MCP_AUTH_ISSUER)]',
  options: { email: str, subject: str, issuer: str },
  async run(ctx, args) {
    const a = parseFlags(z.object({ email: Email, subject: z.string().min(1).max(500), issuer: z.url().optional() }), args);
    const issuer = a.issuer ?? (ctx.config.oauth.mode === 'external' ? ctx.config.oauth.issuer : undefined);
    if (!issuer) throw new UsageError('--issuer is required when MCP_AUTH_ISSUER is not set.');
    ctx.out(await linkExternalIdentity(ctx.orm.em.fork(), { issuer: issuer.replace(/\/$/, ''), subject: a.subject, email: a.email }));
  },
};
