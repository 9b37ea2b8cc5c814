import { z } from 'zod';
import { DateTime, Email } from './auth.ts';

export const SCOPES = ['ingest', 'query', 'query.answer', 'memory.read', 'memory.write'] as const;
export const Scope = z.enum(SCOPES);
export type Scope = z.infer<typeof Scope>;
export const Preset = z.enum(['efficient', 'accuracy']);
export type Preset = z.infer<typeof Preset>;

const scopeList = z
  .array(Scope)
  .max(SCOPES.length)
  .refine((s) => new Set(s).size === s.length, 'scopes must not repeat')
  .refine((s) => !s.includes('query.answer') || s.includes('query'), 'query.answer also requires query');

/** An audience label: a name for a slice of the account's content (docs/api.md, Audiences). */
export const AudienceLabel = z.string().trim().min(1).max(64).regex(/^[A-Za-z0-9][A-Za-z0-9._:-]*$/, 'letters, digits, . _ : - (first a letter or digit)');
const audienceList = z
  .array(AudienceLabel)
  .min(1)
  .max(20)
  .refine((a) => new Set(a).size === a.length, 'audiences must not repeat');

export const ApiKeyCreateRequest = z
  .strictObject({
    name: z.string().trim().min(1).max(100),
    scopes: scopeList.default(['ingest', 'query']),
    maxPreset: Preset.default('accuracy'),
    audiences: audienceList
      .optional()
      .describe('Limit the key to these audience labels: it sees only content labelled with one of them, and what it ingests carries the first. Omit for the whole account.'),
  })
  .meta({ id: 'ApiKeyCreateRequest' });

export const ApiKeyRotateRequest = z
  .strictObject({ name: z.string().trim().min(1).max(100).optional() })
  .meta({ id: 'ApiKeyRotateRequest' });

/** Key metadata: never the secret. */
export const ApiKeyRecord = z
  .strictObject({
    id: z.uuid(),
    name: z.string(),
    prefix: z.string().describe('First characters of the key, for recognising it; not a secret.'),
    scopes: z.array(Scope),
    maxPreset: Preset,
    audiences: z.array(z.string()).nullable().describe('Audience labels the key is limited to; null = the whole account.'),
    status: z.enum(['active', 'revoked']),
    createdAt: DateTime,
    lastUsedAt: DateTime.nullable(),
    revokedAt: DateTime.nullable(),
    replacedBy: z.uuid().nullable().describe('For a rotated-out key, the id of its replacement.'),
  })
  .meta({ id: 'ApiKeyRecord' });

export const ApiKeyWithSecretResponse = z
  .strictObject({
    schemaVersion: z.literal('service-api-key-v1'),
    apiKey: ApiKeyRecord,
    secret: z.string().describe('The raw key. Returned only in this response; store it now.'),
  })
  .meta({ id: 'ApiKeyWithSecretResponse' });

export const ApiKeyResponse = z
  .strictObject({ schemaVersion: z.literal('service-api-key-v1'), apiKey: ApiKeyRecord })
  .meta({ id: 'ApiKeyResponse' });

export const ApiKeyListResponse = z
  .strictObject({ schemaVersion: z.literal('service-api-key-list-v1'), apiKeys: z.array(ApiKeyRecord) })
  .meta({ id: 'ApiKeyListResponse' });

export const ApiKeyIdParams = z.strictObject({ apiKeyId: z.uuid() });

export const AccountDeletionRequest = z
  .strictObject({ confirmation: Email })
  .meta({ id: 'AccountDeletionRequest' });

export const AccountDeletionResponse = z
  .strictObject({ schemaVersion: z.literal('service-account-deletion-v1'), status: z.literal('deleted') })
  .meta({ id: 'AccountDeletionResponse' });

const limit = (def: number) => z.coerce.number().int().min(1).max(100).default(def);

export const OverviewQuery = z.strictObject({ sourceLimit: limit(6), ingestJobLimit: limit(6) });

export const AccountOverview = z
  .object({
    schemaVersion: z.literal('service-account-overview-v2'),
    account: z.object({ email: Email, displayName: z.string().nullable() }),
    credits: z.object({ totalCreditsRemaining: z.int() }),
    recordCounts: z.object({ total: z.int() }),
    sources: z.array(z.record(z.string(), z.unknown())),
    ingestJobs: z.array(z.record(z.string(), z.unknown())),
  })
  .meta({ id: 'AccountOverview' });

export const AccessResponse = z
  .object({
    schemaVersion: z.literal('service-access-v1'),
    key: z.object({ id: z.uuid(), name: z.string(), prefix: z.string(), scopes: z.array(Scope), maxPreset: Preset }),
    account: z.object({ email: Email }),
    contextBoundary: z.object({
      workspaces: z.array(z.string()).describe('Workspace labels this key may use (only `default` exists).'),
      audiences: z.array(z.string()).nullable().describe('Audience labels this key is limited to; null = all.'),
    }),
    quotas: z.object({
      query: z.object({ dailyLimit: z.int(), monthlyLimit: z.int() }),
      ingest: z.object({ dailyLimit: z.int(), monthlyLimit: z.int() }),
    }),
    credits: z.object({ totalRemaining: z.int(), monthlyRemaining: z.int(), onboardingRemaining: z.int() }),
    processingBudgets: z
      .object({
        ocr: z.object({
          creditsPerPage: z.int().describe('Credits one OCR page costs.'),
          pagesPerRequest: z.int().describe('Most pages one provider-backed preview may OCR (402 processing_budget_exceeded above).'),
          pagesPerDay: z.int().describe('Most pages the previews of a UTC day may OCR, together.'),
          pagesUsedToday: z.int(),
        }),
      })
      .describe('Provider budgets of previews that need OCR (scanned PDF pages).'),
  })
  .meta({ id: 'AccessResponse' });

export const UsageQuery = z.strictObject({ ledgerLimit: limit(8) });

const QuotaWindow = z.object({ limit: z.int(), used: z.int(), remaining: z.int(), resetAt: DateTime });

export const AccountUsage = z
  .object({
    schemaVersion: z.literal('service-account-usage-v1'),
    credits: z.object({
      balance: z.object({ totalRemaining: z.int() }),
      monthly: z.object({ remaining: z.int(), allowance: z.int(), periodStart: z.iso.date(), resetAt: DateTime }),
      onboarding: z.object({ remaining: z.int() }),
    }),
    quotas: z.object({
      query: z.object({ daily: QuotaWindow, monthly: QuotaWindow }),
      ingest: z.object({ daily: QuotaWindow, monthly: QuotaWindow }),
    }),
    ledger: z
      .array(
        z.object({
          id: z.string(),
          kind: z.string().describe('charge (a settled operation), reserve (still held), grant_monthly, grant_onboarding, period_reset, adjust, limit_change.'),
          amount: z.int().describe('The signed change of the balance: debits negative, grants positive.'),
          monthlyDelta: z.int(),
          onboardingDelta: z.int(),
          monthlyAfter: z.int(),
          onboardingAfter: z.int(),
          metric: z.string().nullable(),
          reason: z.string().nullable(),
          createdAt: DateTime,
        }),
      )
      .describe('One line per operation (its reserve, charge and refund rows folded), most recent first (ledgerLimit lines).'),
    daily: z
      .array(z.object({ date: z.iso.date(), queries: z.int(), ingests: z.int(), creditsCharged: z.int() }))
      .length(30)
      .describe('The last 30 UTC days, oldest first, today last.'),
  })
  .meta({ id: 'AccountUsage' });
