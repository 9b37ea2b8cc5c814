import path from 'node:path';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

/** Activity slots per workload task queue (WORKER_*_SLOTS). */
export type WorkloadSlots = { ingest: number; memory: number; maintenance: number };

/**
 * Ingest activities one worker process runs at once: enough to overlap one job's database work with
 * another's extraction (which runs in the extraction processes, EXTRACTION_PROCESSES of them).
 */
export const DEFAULT_INGEST_SLOTS = 4;

/** Dynamic OAuth client registrations per client address per hour (OAUTH_REGISTRATIONS_PER_HOUR). */
export const DEFAULT_REGISTRATIONS_PER_HOUR = 20;
/** CLI device codes created per client address per hour (CLI_DEVICE_CODES_PER_HOUR). */
export const DEFAULT_DEVICE_CODES_PER_HOUR = 30;

/**
 * The whole process configuration, read once from the environment by each entrypoint and passed down.
 * Every variable is documented in the README configuration table; keep the two in step.
 */

const port = z.coerce.number().int().min(1).max(65535);
const optionalString = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v.trim()));

const originList = z
  .string()
  .optional()
  .transform((v, ctx) => {
    if (v === undefined || v.trim() === '') return undefined;
    const origins: string[] = [];
    for (const raw of v.split(',').map((s) => s.trim()).filter(Boolean)) {
      let url: URL;
      try {
        url = new URL(raw);
      } catch {
        ctx.addIssue({ code: 'custom', message: `"${raw}" is not an origin such as https://example.com` });
        return z.NEVER;
      }
      if (!['http:', 'https:'].includes(url.protocol) || url.origin !== raw.replace(/\/$/, '')) {
        ctx.addIssue({ code: 'custom', message: `"${raw}" is not an origin (scheme://host[:port], no path)` });
        return z.NEVER;
      }
      origins.push(url.origin);
    }
    return origins;
  });

/** proxy-addr's named ranges, accepted by Fastify's trustProxy like addresses and CIDR ranges. */
const PROXY_RANGE_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Which hops may tell the client's address (X-Forwarded-For): none (unset or `false`), or a
 * comma-separated list of the proxies' addresses, CIDR ranges or the names loopback, linklocal,
 * uniquelocal. Trusting every hop (`true`) would let any client choose its own address, so it is refused.
 */
const trustProxy = optionalString.transform((v, ctx): false | string[] => {
  if (v === undefined || v === 'false') return false;
  const entries = v.split(',').map((x) => x.trim()).filter(Boolean);
  for (const e of entries) {
    if (!PROXY_RANGE_NAMES.has(e) && !ipaddr.isValid(e) && !ipaddr.isValidCIDR(e)) {
      ctx.addIssue({ code: 'custom', message: `"${e}" is not an address, a CIDR range or loopback/linklocal/uniquelocal` });
      return z.NEVER;
    }
  }
  return entries;
});

const booleanFlag = (fallback: 'true' | 'false') =>
  z
    .enum(['true', 'false', '1', '0'])
    .default(fallback)
    .transform((v) => v === 'true' || v === '1');

const envSchema = z.object({
  DATABASE_URL: optionalString.pipe(
    z
      .string()
      .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
      .optional(),
  ),
  DATA_DIR: z.string().trim().min(1).default('.data'),
  EMBEDDED_POSTGRES_PORT: port.default(54329),
  TEMPORAL_ADDRESS: optionalString.pipe(
    z
      .string()
      .regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port, for example 127.0.0.1:7233')
      .optional(),
  ),
  TEMPORAL_NAMESPACE: z.string().trim().min(1).default('default'),
  TEMPORAL_TASK_QUEUE: z.string().trim().min(1).default('cairn'),
  TEMPORAL_DEV_PORT: port.default(7233),
  TEMPORAL_UI_PORT: port.default(8233),
  TEMPORAL_UI_URL: optionalString.pipe(z.url().optional()),
  TEMPORAL_CLI: optionalString,
  HOST: z.string().trim().min(1).default('127.0.0.1'),
  TRUST_PROXY: trustProxy,
  PORT: port.default(8080),
  MCP_PORT: port.default(8081),
  PUBLIC_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  ALLOWED_ORIGINS: originList,
  INGEST_URL_ALLOWLIST: originList,
  INGEST_FETCH_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(600).default(30),
  INGEST_HEARTBEAT_TIMEOUT_SECONDS: z.coerce.number().int().min(2).max(3600).default(120),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  SESSION_LIFETIME_HOURS: z.coerce.number().int().min(1).max(24 * 90).default(168),
  SESSION_IDLE_HOURS: z.coerce.number().int().min(1).max(24 * 90).default(24),
  CLI_SESSION_LIFETIME_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  DEVICE_CODE_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(600),
  DEVICE_POLL_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(60).default(5),
  LOGIN_FREE_FAILURES: z.coerce.number().int().min(1).max(1000).default(5),
  LOGIN_BACKOFF_MAX_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900),
  LOGIN_MAX_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).max(10000).default(50),
  LOGIN_THROTTLE_WINDOW_MINUTES: z.coerce.number().int().min(1).max(1440).default(15),
  ACCOUNT_DELETION_WAIT_MS: z.coerce.number().int().min(1000).max(300_000).default(20_000),
  DEFAULT_MONTHLY_CREDITS: z.coerce.number().int().min(0).default(1000),
  DEFAULT_ONBOARDING_CREDITS: z.coerce.number().int().min(0).default(100),
  DEFAULT_QUERY_DAILY_LIMIT: z.coerce.number().int().min(0).default(1000),
  DEFAULT_INGEST_DAILY_LIMIT: z.coerce.number().int().min(0).default(200),
  DEFAULT_QUERY_MONTHLY_LIMIT: z.coerce.number().int().min(0).default(20_000),
  DEFAULT_INGEST_MONTHLY_LIMIT: z.coerce.number().int().min(0).default(4000),
  SETTLEMENT_GRACE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300),
  RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600),
  WORKER_INGEST_SLOTS: z.coerce.number().int().min(1).max(200).default(DEFAULT_INGEST_SLOTS),
  WORKER_MEMORY_SLOTS: z.coerce.number().int().min(1).max(200).default(4),
  WORKER_MAINTENANCE_SLOTS: z.coerce.number().int().min(1).max(200).default(2),
  EXTRACTION_PROCESSES: z.coerce.number().int().min(1).max(64).default(2),
  EXTRACTION_CPU_SECONDS: z.coerce.number().int().min(1).max(3600).default(60),
  EXTRACTION_MEMORY_MB: z.coerce.number().int().min(128).max(65_536).default(1024),
  INGEST_MAX_PDF_PAGES: z.coerce.number().int().min(1).max(1_000_000).default(2000),
  INGEST_MAX_EXPANSION: z.coerce.number().int().min(1).max(10_000).default(20),
  INGEST_MAX_RECORDS_PER_KB: z.coerce.number().int().min(1).max(100_000).default(128),
  FREE_WORK_PER_ACCOUNT: z.coerce.number().int().min(1).max(1000).default(2),
  OCR_CREDITS_PER_PAGE: z.coerce.number().int().min(0).max(10_000).default(1),
  OCR_PREVIEW_MAX_PAGES: z.coerce.number().int().min(0).max(100_000).default(20),
  OCR_PREVIEW_DAILY_PAGES: z.coerce.number().int().min(0).max(10_000_000).default(200),
  OCR_PREVIEW_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(120),
  OCR_PREVIEW_RETENTION_HOURS: z.coerce.number().int().min(1).max(24 * 30).default(24),
  BACKGROUND_NICE: z.coerce.number().int().min(0).max(19).default(10),
  MCP_PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  MCP_LOCAL_DEV_ORIGINS: booleanFlag('false'),
  MCP_AUTH_ISSUER: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  OAUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(3600),
  OAUTH_REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30),
  OAUTH_UNUSED_CLIENT_TTL_HOURS: z.coerce.number().int().min(1).max(24 * 365).default(24),
  OAUTH_REGISTRATIONS_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_REGISTRATIONS_PER_HOUR),
  CLI_DEVICE_CODES_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_DEVICE_CODES_PER_HOUR),
  MIGRATE_ON_START: booleanFlag('true'),
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000),
  REQUEST_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(120),
  METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional()),
  METRICS_OPEN: booleanFlag('false'),
  WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65_535).default(9464),
  QUERY_IDEMPOTENCY_RETENTION_HOURS: z.coerce.number().int().min(1).max(24 * 365).default(24),
  QUERY_INDEX_MAX_MB: z.coerce.number().int().min(0).max(1_048_576).default(256),
  ANSWER_PROVIDER: z.enum(['builtin', 'openai', 'disabled']).default('builtin'),
  ANSWER_PROVIDER_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  ANSWER_PROVIDER_MODEL: optionalString,
  ANSWER_PROVIDER_API_KEY: optionalString,
  ANSWER_PROVIDER_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30),
  ANSWER_PROVIDER_MAX_CREDITS: z.coerce.number().int().min(0).max(1000).default(2),
  ANSWER_PROVIDER_TOKENS_PER_CREDIT: z.coerce.number().int().min(1).default(2000),
  MEMORY_DERIVER_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  MEMORY_DERIVER_MODEL: optionalString,
  MEMORY_DERIVER_API_KEY: optionalString,
  MEMORY_DERIVER_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30),
  EMBEDDINGS_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional()),
  EMBEDDINGS_MODEL: optionalString,
  EMBEDDINGS_API_KEY: optionalString,
  EMBEDDINGS_DIMENSIONS: z.coerce.number().int().min(8).max(8192).optional(),
  EMBEDDINGS_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(10),
  EMBEDDINGS_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).default(64),
});

/** The answer provider (ANSWER_PROVIDER_*): the built-in extractive answerer, none, or an OpenAI-compatible model. */
export type AnswerConfig =
  | { mode: 'builtin' }
  | { mode: 'disabled' }
  | {
      mode: 'openai';
      url: string;
      model: string;
      apiKey: string | undefined;
      timeoutMs: number;
      /** Most provider-work credits one answer may cost (reserved up front, unused part refunded). */
      maxCredits: number;
      tokensPerCredit: number;
    };

/** How far one source may expand when extracted (INGEST_MAX_*), relative to its size. */
export type IngestLimits = { maxPdfPages: number; maxExpansion: number; maxRecordsPerKb: number };

/** The optional OpenAI-compatible embeddings provider (EMBEDDINGS_*). */
export type EmbeddingsConfig = { baseUrl: string; model: string; apiKey?: string; dimensions?: number; timeoutMs: number; batchSize: number };

export type Config = {
  databaseUrl: string | undefined;
  dataDir: string;
  embeddedPostgresPort: number;
  temporal: {
    address: string | undefined;
    namespace: string;
    taskQueue: string;
    devPort: number;
    uiPort: number;
    uiUrl: string | undefined;
    cli: string | undefined;
  };
  host: string;
  /** Fastify's trustProxy: which hops may give the client's address (sign-in throttling, registration limit). */
  trustProxy: false | string[];
  port: number;
  mcpPort: number;
  publicBaseUrl: string;
  allowedOrigins: string[];
  ingestUrlAllowlist: string[];
  ingestFetchTimeoutMs: number;
  ingestHeartbeatTimeoutMs: number;
  logLevel: z.infer<typeof envSchema>['LOG_LEVEL'];
  migrateOnStart: boolean;
  shutdownTimeoutMs: number;
  /** A request (headers and body) must have arrived within this (REQUEST_TIMEOUT_SECONDS), or 408. */
  requestTimeoutMs: number;
  auth: {
    sessionLifetimeMs: number;
    sessionIdleMs: number;
    cliSessionLifetimeMs: number;
    deviceCodeTtlMs: number;
    devicePollIntervalSeconds: number;
    /** CLI device codes created per client address per hour (CLI_DEVICE_CODES_PER_HOUR). */
    deviceCodesPerHour: number;
    loginFreeFailures: number;
    loginBackoffMaxMs: number;
    loginMaxFailuresPerAddress: number;
    loginThrottleWindowMs: number;
    accountDeletionWaitMs: number;
  };
  metering: { settlementGraceMs: number; rateLimitPerMinute: number };
  /**
   * Activity slots of each workload's task queue in one worker process; the nice value of background
   * work (the worker, extraction processes, embedded-database backends, the embedded Temporal server; 0 = off).
   */
  worker: { slots: WorkloadSlots; nice: number };
  /** Extraction processes per API or worker process, and what one task may use (issue 24). */
  extraction: { processes: number; cpuSeconds: number; memoryMb: number; limits: IngestLimits };
  /** Dry runs and memory reads one account may have in flight in one API process. */
  freeWorkPerAccount: number;
  /**
   * OCR of scanned PDF pages (core/ingest/ocr): credits per page; the provider budgets of previews (pages
   * per request and per UTC day, per account unless the account row overrides them); how long a preview's
   * OCR may run; how long its text is kept for queueing the same bytes.
   */
  ocr: { creditsPerPage: number; previewMaxPages: number; previewDailyPages: number; previewTimeoutMs: number; previewRetentionMs: number };
  mcp: {
    /** {mcp_url}: the MCP listener's public address, also the OAuth resource indicator. */
    publicUrl: string;
    /** The API-port mount of the same endpoint ({PUBLIC_BASE_URL}/mcp), a second accepted resource. */
    apiMountUrl: string;
    /** Admit localhost Origins other than the canonical ones (local development servers only). */
    localDevOrigins: boolean;
    /** Origins a browser-based MCP client may send: the canonical service origins. */
    allowedOrigins: string[];
  };
  oauth: {
    /** `builtin`: our authorization server at {issuer}; `external`: an operator-configured identity provider. */
    mode: 'builtin' | 'external';
    /** {auth_url}: the authorization server's issuer identifier. */
    issuer: string;
    accessTokenTtlSeconds: number;
    refreshTokenTtlSeconds: number;
    /** A dynamically registered client that never gets a grant is forgotten after this. */
    unusedClientTtlSeconds: number;
    /** Dynamic client registrations per client address per hour. */
    registrationsPerHour: number;
  };
  /** Prometheus metrics: who may scrape (bearer METRICS_TOKEN, or anyone with METRICS_OPEN); worker port (0 = off). */
  ops: { metrics: { token: string | undefined; open: boolean }; workerMetricsPort: number };
  /** Query: how long stored operations replay (then idempotency_expired), and the answer provider. */
  query: { idempotencyRetentionMs: number; answer: AnswerConfig; indexMaxBytes: number };
  /** Native memory: the optional OpenAI-compatible claim deriver (null = the built-in rules). */
  memory: { deriver: { baseUrl: string; model: string; apiKey?: string; timeoutMs: number } | null };
  /** The optional OpenAI-compatible embeddings provider (null = retrieval is lexical only). */
  embeddings: EmbeddingsConfig | null;
  accountDefaults: {
    monthlyCredits: number;
    onboardingCredits: number;
    queryDailyLimit: number;
    ingestDailyLimit: number;
    queryMonthlyLimit: number;
    ingestMonthlyLimit: number;
  };
};

export class ConfigError extends Error {
  readonly issues: { variable: string; message: string }[];
  constructor(issues: { variable: string; message: string }[]) {
    super(
      'Invalid configuration:\n' + issues.map((i) => `  ${i.variable}: ${i.message}`).join('\n'),
    );
    this.name = 'ConfigError';
    this.issues = issues;
  }
}

type Env = z.infer<typeof envSchema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): Config {
  const e = parseEnv(env);
  const publicBaseUrl = (e.PUBLIC_BASE_URL ?? `http://127.0.0.1:${e.PORT}`).replace(/\/$/, '');
  return {
    databaseUrl: e.DATABASE_URL,
    dataDir: path.resolve(cwd, e.DATA_DIR),
    embeddedPostgresPort: e.EMBEDDED_POSTGRES_PORT,
    temporal: temporalConfig(e),
    host: e.HOST,
    trustProxy: e.TRUST_PROXY,
    port: e.PORT,
    mcpPort: e.MCP_PORT,
    publicBaseUrl,
    allowedOrigins: e.ALLOWED_ORIGINS ?? [new URL(publicBaseUrl).origin],
    ingestUrlAllowlist: e.INGEST_URL_ALLOWLIST ?? [],
    ingestFetchTimeoutMs: e.INGEST_FETCH_TIMEOUT_SECONDS * 1000,
    ingestHeartbeatTimeoutMs: e.INGEST_HEARTBEAT_TIMEOUT_SECONDS * 1000,
    logLevel: e.LOG_LEVEL,
    migrateOnStart: e.MIGRATE_ON_START,
    shutdownTimeoutMs: e.SHUTDOWN_TIMEOUT_MS,
    requestTimeoutMs: e.REQUEST_TIMEOUT_SECONDS * 1000,
    auth: authConfig(e),
    metering: {
      settlementGraceMs: e.SETTLEMENT_GRACE_SECONDS * 1000,
      rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    },
    worker: {
      slots: { ingest: e.WORKER_INGEST_SLOTS, memory: e.WORKER_MEMORY_SLOTS, maintenance: e.WORKER_MAINTENANCE_SLOTS },
      nice: e.BACKGROUND_NICE,
    },
    extraction: {
      processes: e.EXTRACTION_PROCESSES,
      cpuSeconds: e.EXTRACTION_CPU_SECONDS,
      memoryMb: e.EXTRACTION_MEMORY_MB,
      limits: { maxPdfPages: e.INGEST_MAX_PDF_PAGES, maxExpansion: e.INGEST_MAX_EXPANSION, maxRecordsPerKb: e.INGEST_MAX_RECORDS_PER_KB },
    },
    freeWorkPerAccount: e.FREE_WORK_PER_ACCOUNT,
    ocr: {
      creditsPerPage: e.OCR_CREDITS_PER_PAGE,
      previewMaxPages: e.OCR_PREVIEW_MAX_PAGES,
      previewDailyPages: e.OCR_PREVIEW_DAILY_PAGES,
      previewTimeoutMs: e.OCR_PREVIEW_TIMEOUT_SECONDS * 1000,
      previewRetentionMs: e.OCR_PREVIEW_RETENTION_HOURS * 3_600_000,
    },
    mcp: mcpConfig(e, publicBaseUrl),
    oauth: oauthConfig(e, publicBaseUrl),
    ops: { metrics: { token: e.METRICS_TOKEN, open: e.METRICS_OPEN }, workerMetricsPort: e.WORKER_METRICS_PORT },
    query: {
      idempotencyRetentionMs: e.QUERY_IDEMPOTENCY_RETENTION_HOURS * 3_600_000,
      indexMaxBytes: e.QUERY_INDEX_MAX_MB * 1024 * 1024,
      answer: answerConfig(e),
    },
    embeddings: e.EMBEDDINGS_BASE_URL
      ? {
          baseUrl: e.EMBEDDINGS_BASE_URL, model: e.EMBEDDINGS_MODEL!, apiKey: e.EMBEDDINGS_API_KEY, dimensions: e.EMBEDDINGS_DIMENSIONS,
          timeoutMs: e.EMBEDDINGS_TIMEOUT_SECONDS * 1000, batchSize: e.EMBEDDINGS_BATCH_SIZE,
        }
      : null,
    memory: {
      deriver: e.MEMORY_DERIVER_BASE_URL
        ? { baseUrl: e.MEMORY_DERIVER_BASE_URL, model: e.MEMORY_DERIVER_MODEL ?? 'gpt-4o-mini', apiKey: e.MEMORY_DERIVER_API_KEY, timeoutMs: e.MEMORY_DERIVER_TIMEOUT_SECONDS * 1000 }
        : null,
    },
    accountDefaults: {
      monthlyCredits: e.DEFAULT_MONTHLY_CREDITS,
      onboardingCredits: e.DEFAULT_ONBOARDING_CREDITS,
      queryDailyLimit: e.DEFAULT_QUERY_DAILY_LIMIT,
      ingestDailyLimit: e.DEFAULT_INGEST_DAILY_LIMIT,
      queryMonthlyLimit: e.DEFAULT_QUERY_MONTHLY_LIMIT,
      ingestMonthlyLimit: e.DEFAULT_INGEST_MONTHLY_LIMIT,
    },
  };
}

/** Validates the environment, including the variables that are required only together. */
function parseEnv(env: NodeJS.ProcessEnv): Env {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => ({
        variable: String(issue.path[0] ?? '(environment)'),
        message: issue.message,
      })),
    );
  }
  const e = parsed.data;
  if (e.EMBEDDINGS_BASE_URL && !e.EMBEDDINGS_MODEL) {
    throw new ConfigError([{ variable: 'EMBEDDINGS_MODEL', message: 'is required when EMBEDDINGS_BASE_URL is set' }]);
  }
  if (e.ANSWER_PROVIDER === 'openai' && (!e.ANSWER_PROVIDER_URL || !e.ANSWER_PROVIDER_MODEL)) {
    throw new ConfigError([
      { variable: e.ANSWER_PROVIDER_URL ? 'ANSWER_PROVIDER_MODEL' : 'ANSWER_PROVIDER_URL', message: 'is required when ANSWER_PROVIDER=openai' },
    ]);
  }
  return e;
}

function temporalConfig(e: Env): Config['temporal'] {
  return {
    address: e.TEMPORAL_ADDRESS,
    namespace: e.TEMPORAL_NAMESPACE,
    taskQueue: e.TEMPORAL_TASK_QUEUE,
    devPort: e.TEMPORAL_DEV_PORT,
    uiPort: e.TEMPORAL_UI_PORT,
    uiUrl: e.TEMPORAL_UI_URL,
    cli: e.TEMPORAL_CLI,
  };
}

function authConfig(e: Env): Config['auth'] {
  return {
    sessionLifetimeMs: e.SESSION_LIFETIME_HOURS * 3_600_000,
    sessionIdleMs: e.SESSION_IDLE_HOURS * 3_600_000,
    cliSessionLifetimeMs: e.CLI_SESSION_LIFETIME_DAYS * 86_400_000,
    deviceCodeTtlMs: e.DEVICE_CODE_TTL_SECONDS * 1000,
    devicePollIntervalSeconds: e.DEVICE_POLL_INTERVAL_SECONDS,
    deviceCodesPerHour: e.CLI_DEVICE_CODES_PER_HOUR,
    loginFreeFailures: e.LOGIN_FREE_FAILURES,
    loginBackoffMaxMs: e.LOGIN_BACKOFF_MAX_SECONDS * 1000,
    loginMaxFailuresPerAddress: e.LOGIN_MAX_FAILURES_PER_ADDRESS,
    loginThrottleWindowMs: e.LOGIN_THROTTLE_WINDOW_MINUTES * 60_000,
    accountDeletionWaitMs: e.ACCOUNT_DELETION_WAIT_MS,
  };
}

function mcpConfig(e: Env, publicBaseUrl: string): Config['mcp'] {
  // URL.href normalises: a root address keeps its trailing slash, a path has none added.
  const mcpPublicUrl = new URL(e.MCP_PUBLIC_URL ?? `http://127.0.0.1:${e.MCP_PORT}/`).href;
  return {
    publicUrl: mcpPublicUrl,
    apiMountUrl: `${publicBaseUrl}/mcp`,
    localDevOrigins: e.MCP_LOCAL_DEV_ORIGINS,
    allowedOrigins: [...new Set([new URL(publicBaseUrl).origin, new URL(mcpPublicUrl).origin])],
  };
}

function oauthConfig(e: Env, publicBaseUrl: string): Config['oauth'] {
  return {
    mode: e.MCP_AUTH_ISSUER ? 'external' : 'builtin',
    issuer: (e.MCP_AUTH_ISSUER ?? `${publicBaseUrl}/oauth`).replace(/\/$/, ''),
    accessTokenTtlSeconds: e.OAUTH_ACCESS_TOKEN_TTL_SECONDS,
    refreshTokenTtlSeconds: e.OAUTH_REFRESH_TOKEN_TTL_DAYS * 86_400,
    unusedClientTtlSeconds: e.OAUTH_UNUSED_CLIENT_TTL_HOURS * 3600,
    registrationsPerHour: e.OAUTH_REGISTRATIONS_PER_HOUR,
  };
}

/** parseEnv has checked that the openai provider comes with its URL and model. */
function answerConfig(e: Env): AnswerConfig {
  return e.ANSWER_PROVIDER === 'openai'
    ? {
        mode: 'openai',
        url: e.ANSWER_PROVIDER_URL!,
        model: e.ANSWER_PROVIDER_MODEL!,
        apiKey: e.ANSWER_PROVIDER_API_KEY,
        timeoutMs: e.ANSWER_PROVIDER_TIMEOUT_SECONDS * 1000,
        maxCredits: e.ANSWER_PROVIDER_MAX_CREDITS,
        tokensPerCredit: e.ANSWER_PROVIDER_TOKENS_PER_CREDIT,
      }
    : { mode: e.ANSWER_PROVIDER };
}

/** Entrypoints call this: a bad variable ends the process with a message naming it, not a stack trace. */
export function loadConfigOrExit(env: NodeJS.ProcessEnv = process.env): Config {
  try {
    return loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}

/** Settings a process needs before the database or Temporal are known (the supervisor fills them in). */
export function requireDatabaseUrl(config: Config): string {
  if (!config.databaseUrl) {
    throw new ConfigError([
      { variable: 'DATABASE_URL', message: 'is required for this process (npm start provides it locally)' },
    ]);
  }
  return config.databaseUrl;
}

export function requireTemporalAddress(config: Config): string {
  if (!config.temporal.address) {
    throw new ConfigError([
      { variable: 'TEMPORAL_ADDRESS', message: 'is required for this process (npm start provides it locally)' },
    ]);
  }
  return config.temporal.address;
}
