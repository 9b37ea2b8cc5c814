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
/**
 * CLI device codes created per client address per hour (CLI_DEVICE_CODES_PER_HOUR): bounds a flood of
 * unauthenticated rows while a whole team behind one address, or the conformance kit (about 40 in a few
 * minutes), signs in freely.
 */
export const DEFAULT_DEVICE_CODES_PER_HOUR = 300;

/**
 * The whole process configuration, read once from the environment by each entrypoint and passed down.
 * Every variable is described in settingGroups below, which docs/configuration.md is generated from.
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

/**
 * The settings, grouped by the component that reads them. Each one's `.describe()` text is its one line
 * in docs/configuration.md, which `npm run docs:config` writes from these groups (a unit test keeps the
 * file in step).
 */
export const settingGroups = {
  'Database': {
    DATABASE_URL: optionalString
      .pipe(z.string().regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL').optional())
      .describe('`postgres://` URL of the database; unset, `npm start` runs an embedded PostgreSQL. Required by `npm run api` and `npm run worker`.'),
    DATA_DIR: z.string().trim().min(1).default('.data')
      .describe("Local state of `npm start`: the embedded PostgreSQL's data and the Temporal dev server's SQLite file."),
    EMBEDDED_POSTGRES_PORT: port.default(54329).describe('Port of the embedded PostgreSQL (localhost only).'),
    MIGRATE_ON_START: booleanFlag('true')
      .describe('Whether `npm run api` applies pending migrations at start-up (under an advisory lock, safe with replicas).'),
  },
  'Temporal': {
    TEMPORAL_ADDRESS: optionalString
      .pipe(z.string().regex(/^[^\s:/]+:\d{1,5}$/, 'must be host:port, for example 127.0.0.1:7233').optional())
      .describe('`host:port` of the Temporal frontend; unset, `npm start` runs the dev server. Required by `npm run api` and `npm run worker`.'),
    TEMPORAL_NAMESPACE: z.string().trim().min(1).default('default')
      .describe('Temporal namespace; the dev server registers it when it is not `default`.'),
    TEMPORAL_TASK_QUEUE: z.string().trim().min(1).default('cairn')
      .describe('Base name of the task queues: `<name>-memory`, `<name>-ingest` and `<name>` (maintenance); workers poll all three.'),
    TEMPORAL_DEV_PORT: port.default(7233).describe('Port of the dev server `npm start` runs.'),
    TEMPORAL_UI_PORT: port.default(8233).describe("Port of the dev server's Web UI."),
    TEMPORAL_UI_URL: optionalString.pipe(z.url().optional())
      .describe('Address of an external Temporal UI, printed by `npm start` when `TEMPORAL_ADDRESS` is set.'),
    TEMPORAL_CLI: optionalString
      .describe('Path to a `temporal` binary, tried before `PATH`, the Go bin folder and a `go install` build.'),
  },
  'HTTP listeners': {
    HOST: z.string().trim().min(1).default('127.0.0.1')
      .describe('Interface the API, MCP and worker metrics listeners bind to (`0.0.0.0` in containers).'),
    PORT: port.default(8080).describe('API port.'),
    MCP_PORT: port.default(8081).describe('MCP listener port.'),
    PUBLIC_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe("The API's public address (links, OAuth issuer, cookies' Secure flag); unset, `http://127.0.0.1:<PORT>`."),
    ALLOWED_ORIGINS: originList
      .describe('Comma-separated browser origins allowed to make session-authenticated writes; unset, the origin of `PUBLIC_BASE_URL`.'),
    TRUST_PROXY: trustProxy
      .describe('Proxies whose `X-Forwarded-For` gives the client address: addresses, CIDR ranges or `loopback`/`linklocal`/`uniquelocal`; `true` is refused.'),
    LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info')
      .describe('pino log level; logs are JSON with secrets redacted.'),
    SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(15_000)
      .describe('How long a process may drain on SIGTERM before it exits hard.'),
    REQUEST_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(120)
      .describe('A request (headers and body) must have arrived within this, or 408 and the connection closed (checked every 30 s); 120 s lets a 50 MB upload take 0.6 MB/s.'),
  },
  'Sign-in and sessions': {
    SESSION_LIFETIME_HOURS: z.coerce.number().int().min(1).max(24 * 90).default(168).describe('Browser session lifetime.'),
    SESSION_IDLE_HOURS: z.coerce.number().int().min(1).max(24 * 90).default(24).describe('A browser session unused this long ends.'),
    CLI_SESSION_LIFETIME_DAYS: z.coerce.number().int().min(1).max(365).default(30).describe('CLI session token lifetime.'),
    DEVICE_CODE_TTL_SECONDS: z.coerce.number().int().min(60).max(3600).default(600)
      .describe('How long a CLI device code can be approved and exchanged.'),
    DEVICE_POLL_INTERVAL_SECONDS: z.coerce.number().int().min(0).max(60).default(5)
      .describe('Poll interval given to CLI clients; faster polls get 429 `slow_down`.'),
    CLI_DEVICE_CODES_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_DEVICE_CODES_PER_HOUR)
      .describe('CLI device codes created per client address per hour (asking needs no credential); then 429 `rate_limited`.'),
    LOGIN_FREE_FAILURES: z.coerce.number().int().min(1).max(1000).default(5)
      .describe('Failed sign-ins of one account from one address before that pair waits (1 s, 2 s, 4 s, ...); other addresses are unaffected.'),
    LOGIN_BACKOFF_MAX_SECONDS: z.coerce.number().int().min(1).max(86_400).default(900).describe('The longest such wait.'),
    LOGIN_MAX_FAILURES_PER_ADDRESS: z.coerce.number().int().min(1).max(10000).default(50)
      .describe('Failed sign-ins from one address (any accounts) before it waits `LOGIN_THROTTLE_WINDOW_MINUTES`.'),
    LOGIN_THROTTLE_WINDOW_MINUTES: z.coerce.number().int().min(1).max(1440).default(15)
      .describe('That wait; also how long a quiet pair or address takes to be forgotten.'),
    ACCOUNT_DELETION_WAIT_MS: z.coerce.number().int().min(1000).max(300_000).default(20_000)
      .describe('How long `DELETE /v1/account` waits for the deletion workflow before answering 503 `account_deletion_pending`.'),
  },
  'MCP and OAuth': {
    MCP_PUBLIC_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe("The MCP listener's public address ({mcp_url}, the OAuth resource); unset, `http://127.0.0.1:<MCP_PORT>/`."),
    MCP_LOCAL_DEV_ORIGINS: booleanFlag('false')
      .describe('`true` admits loopback Origins at the MCP endpoint when `HOST` is not loopback (local development only).'),
    MCP_AUTH_ISSUER: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe('Issuer of an external identity provider for MCP OAuth; unset, the built-in server at `PUBLIC_BASE_URL/oauth`.'),
    OAUTH_ACCESS_TOKEN_TTL_SECONDS: z.coerce.number().int().min(60).max(86_400).default(3600)
      .describe('Lifetime of MCP OAuth access tokens (built-in server).'),
    OAUTH_REFRESH_TOKEN_TTL_DAYS: z.coerce.number().int().min(1).max(365).default(30)
      .describe('Lifetime of refresh tokens and grants (built-in server); refresh tokens rotate on use.'),
    OAUTH_UNUSED_CLIENT_TTL_HOURS: z.coerce.number().int().min(1).max(24 * 365).default(24)
      .describe('A registered OAuth client never authorized is forgotten after this.'),
    OAUTH_REGISTRATIONS_PER_HOUR: z.coerce.number().int().min(1).max(100_000).default(DEFAULT_REGISTRATIONS_PER_HOUR)
      .describe('Dynamic client registrations per client address per hour.'),
  },
  'Credits, quotas and limits': {
    DEFAULT_MONTHLY_CREDITS: z.coerce.number().int().min(0).default(1000).describe('Monthly credit allowance of new accounts.'),
    DEFAULT_ONBOARDING_CREDITS: z.coerce.number().int().min(0).default(100).describe('One-time credits of new accounts.'),
    DEFAULT_QUERY_DAILY_LIMIT: z.coerce.number().int().min(0).default(1000).describe('Queries per UTC day of new accounts.'),
    DEFAULT_INGEST_DAILY_LIMIT: z.coerce.number().int().min(0).default(200).describe('Live ingests per UTC day of new accounts.'),
    DEFAULT_QUERY_MONTHLY_LIMIT: z.coerce.number().int().min(0).default(20_000).describe('Queries per UTC month of new accounts.'),
    DEFAULT_INGEST_MONTHLY_LIMIT: z.coerce.number().int().min(0).default(4000).describe('Live ingests per UTC month of new accounts.'),
    SETTLEMENT_GRACE_SECONDS: z.coerce.number().int().min(1).max(86_400).default(300)
      .describe("Age after which the worker's sweeper settles a credit reservation the API left open."),
    RATE_LIMIT_PER_MINUTE: z.coerce.number().int().min(1).max(1_000_000).default(600)
      .describe('Authenticated requests per account per minute, across all credentials and API processes.'),
    FREE_WORK_PER_ACCOUNT: z.coerce.number().int().min(1).max(1000).default(2)
      .describe('Dry runs and memory reads one account may have in flight in one API process; more get 429 `rate_limited`.'),
  },
  'Ingest and extraction': {
    INGEST_URL_ALLOWLIST: originList
      .describe('Comma-separated origins URL ingest may fetch although local or private (test fixtures; keep empty in production).'),
    INGEST_FETCH_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(600).default(30)
      .describe('Time limit for fetching one URL, all redirect hops included.'),
    INGEST_HEARTBEAT_TIMEOUT_SECONDS: z.coerce.number().int().min(2).max(3600).default(120)
      .describe('An ingest step whose worker stops heartbeating this long is retried on another worker.'),
    EXTRACTION_PROCESSES: z.coerce.number().int().min(1).max(64).default(2)
      .describe('Extraction processes per API or worker process (untrusted parsing never runs on an event loop); about one per core.'),
    EXTRACTION_CPU_SECONDS: z.coerce.number().int().min(1).max(3600).default(60)
      .describe('CPU time one extraction may use; past it the process is killed and the job fails naming the limit.'),
    EXTRACTION_MEMORY_MB: z.coerce.number().int().min(128).max(65_536).default(1024)
      .describe('Resident memory one extraction process may reach; past it the process is killed and the job fails.'),
    INGEST_LARGE_BYTES: z.coerce.number().int().min(0).max(1_000_000_000).default(1_048_576)
      .describe("A source of at least this many bytes is large: one account's large builds and OCR hold at most all but one of a worker's ingest slots."),
    INGEST_MAX_PDF_PAGES: z.coerce.number().int().min(1).max(1_000_000).default(2000).describe('Pages a PDF may have.'),
    INGEST_MAX_EXPANSION: z.coerce.number().int().min(1).max(10_000).default(20)
      .describe('How many times its size a source may expand (inflated PDF streams: at least 64 MB; text and records: at least 4 MiB).'),
    INGEST_MAX_RECORDS_PER_KB: z.coerce.number().int().min(1).max(100_000).default(128)
      .describe('Records a source may make per KB of input (at least 5,000).'),
  },
  'OCR': {
    OCR_CREDITS_PER_PAGE: z.coerce.number().int().min(0).max(10_000).default(1)
      .describe('Credits one scanned PDF page costs to recognise, in previews and live jobs alike.'),
    OCR_PREVIEW_MAX_PAGES: z.coerce.number().int().min(0).max(100_000).default(20)
      .describe('Pages one preview may OCR, else 402 `processing_budget_exceeded` (an account may have its own, `admin -- limits set`).'),
    OCR_PREVIEW_DAILY_PAGES: z.coerce.number().int().min(0).max(10_000_000).default(200)
      .describe("Pages one account's previews may OCR per UTC day (an account may have its own)."),
    OCR_PREVIEW_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(3600).default(120)
      .describe("How long a preview's OCR may run; past it the preview is 502 `processing_interrupted`."),
    OCR_PREVIEW_RETENTION_HOURS: z.coerce.number().int().min(1).max(24 * 30).default(24)
      .describe("How long a preview's recognised text is kept, so queueing the same bytes is not charged again."),
  },
  'Worker': {
    WORKER_INGEST_SLOTS: z.coerce.number().int().min(1).max(200).default(DEFAULT_INGEST_SLOTS)
      .describe('Ingest activities (fetches, builds) one worker process runs at once.'),
    WORKER_MEMORY_SLOTS: z.coerce.number().int().min(1).max(200).default(4)
      .describe('Memory event batches one worker process runs at once.'),
    WORKER_MAINTENANCE_SLOTS: z.coerce.number().int().min(1).max(200).default(2)
      .describe('Settlement sweeps and deletions one worker process runs at once.'),
    BACKGROUND_NICE: z.coerce.number().int().min(0).max(19).default(10)
      .describe("Nice value of the worker (0 = unchanged), so background work yields the cores to requests; extraction runs at 19."),
  },
  'Metrics': {
    METRICS_TOKEN: optionalString.pipe(z.string().min(16, 'must be at least 16 characters').optional())
      .describe('Bearer token (16+ characters) a Prometheus scraper sends to `GET /metrics` of the API and the worker.'),
    METRICS_OPEN: booleanFlag('false')
      .describe('`true` serves metrics to anyone who reaches them; with neither this nor a token, scrapes get 403.'),
    WORKER_METRICS_PORT: z.coerce.number().int().min(0).max(65_535).default(9464)
      .describe("Port of the worker's `GET /metrics`; `0` turns it off."),
  },
  'Query and answers': {
    QUERY_IDEMPOTENCY_RETENTION_HOURS: z.coerce.number().int().min(1).max(24 * 365).default(24)
      .describe('How long a completed query replays for its key; later the key is 409 `idempotency_expired`.'),
    QUERY_INDEX_MAX_MB: z.coerce.number().int().min(0).max(1_048_576).default(256)
      .describe("Memory per API process for in-memory copies of accounts' search indexes (least recently used go first; `0` = off)."),
    ANSWER_PROVIDER: z.enum(['builtin', 'openai', 'disabled']).default('builtin')
      .describe('`builtin` (extractive), `openai` (an OpenAI-compatible chat model, citations checked) or `disabled`.'),
    ANSWER_PROVIDER_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe('Base URL of the OpenAI-compatible API; required with `openai`.'),
    ANSWER_PROVIDER_MODEL: optionalString.describe('Model name sent to the provider; required with `openai`.'),
    ANSWER_PROVIDER_API_KEY: optionalString.describe('Bearer key for the provider (never logged).'),
    ANSWER_PROVIDER_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30)
      .describe('Provider call deadline; a timeout is `execution: degraded`.'),
    ANSWER_PROVIDER_MAX_CREDITS: z.coerce.number().int().min(0).max(1000).default(2)
      .describe('Provider-work credits reserved per answer on top of the base credit; the unused part is refunded.'),
    ANSWER_PROVIDER_TOKENS_PER_CREDIT: z.coerce.number().int().min(1).default(2000)
      .describe('Provider tokens one credit pays for.'),
  },
  'Embeddings': {
    EMBEDDINGS_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe('OpenAI-compatible API whose `/embeddings` makes vectors; unset, retrieval ranks by words only.'),
    EMBEDDINGS_MODEL: optionalString
      .describe('Model name; required with `EMBEDDINGS_BASE_URL`. Vectors of another model are never compared.'),
    EMBEDDINGS_API_KEY: optionalString.describe('Bearer key for that API (never logged).'),
    EMBEDDINGS_DIMENSIONS: z.coerce.number().int().min(8).max(8192).optional()
      .describe('`dimensions` sent to the API (4 bytes per dimension per vector stored).'),
    EMBEDDINGS_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(10)
      .describe('Deadline of one call; a query that cannot embed its question ranks by words (`semantic_unavailable`).'),
    EMBEDDINGS_BATCH_SIZE: z.coerce.number().int().min(1).max(2048).default(64).describe('Texts per provider call.'),
  },
  'Reranking': {
    RERANK_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe('API speaking the common rerank protocol (`POST {url}/rerank`); unset, the lexical order stands.'),
    RERANK_MODEL: optionalString.describe('Model name; required with `RERANK_BASE_URL`.'),
    RERANK_API_KEY: optionalString.describe('Bearer key for that API (never logged).'),
    RERANK_TOP_N: z.coerce.number().int().min(2).max(100).default(20)
      .describe("An accuracy query's best hits the provider reorders."),
    RERANK_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(60).default(5)
      .describe('Deadline of one call; past it, the lexical order stands (`rerank_unavailable`).'),
  },
  'Memory': {
    MEMORY_DERIVER_BASE_URL: optionalString.pipe(z.url({ protocol: /^https?$/ }).optional())
      .describe('OpenAI-compatible API whose `/chat/completions` derives memory claims; unset, the built-in rules.'),
    MEMORY_DERIVER_MODEL: optionalString.describe('Model name sent to that API; unset, `gpt-4o-mini`.'),
    MEMORY_DERIVER_API_KEY: optionalString.describe('Bearer key for that API (never logged).'),
    MEMORY_DERIVER_TIMEOUT_SECONDS: z.coerce.number().int().min(1).max(300).default(30)
      .describe('Timeout of one deriver call; failures are retried five times before the event fails.'),
  },
};

/** Every group's settings in one object type (the groups' shapes intersected). */
type AllSettings = (typeof settingGroups)[keyof typeof settingGroups] extends infer G
  ? (G extends unknown ? (x: G) => void : never) extends (x: infer I) => void
    ? I
    : never
  : never;

const envSchema = z.object(Object.assign({}, ...Object.values(settingGroups)) as AllSettings);

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

/** The optional rerank provider (RERANK_*): core/retrieval/rerank.ts. */
export type RerankConfig = { baseUrl: string; model: string; apiKey?: string; topN: number; timeoutMs: number };

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
  /** INGEST_LARGE_BYTES: the size from which a build counts against its account's share of the ingest slots. */
  ingestLargeBytes: number;
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
  rerank: RerankConfig | null;
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
    ingestLargeBytes: e.INGEST_LARGE_BYTES,
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
    ...retrievalProviders(e),
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
  for (const [url, model] of [['EMBEDDINGS_BASE_URL', 'EMBEDDINGS_MODEL'], ['RERANK_BASE_URL', 'RERANK_MODEL']] as const) {
    if (e[url] && !e[model]) throw new ConfigError([{ variable: model, message: `is required when ${url} is set` }]);
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

/** The optional providers of retrieval: embeddings (EMBEDDINGS_*) and reranking (RERANK_*). */
function retrievalProviders(e: Env): { embeddings: EmbeddingsConfig | null; rerank: RerankConfig | null } {
  return {
    embeddings: e.EMBEDDINGS_BASE_URL
      ? {
          baseUrl: e.EMBEDDINGS_BASE_URL, model: e.EMBEDDINGS_MODEL!, apiKey: e.EMBEDDINGS_API_KEY, dimensions: e.EMBEDDINGS_DIMENSIONS,
          timeoutMs: e.EMBEDDINGS_TIMEOUT_SECONDS * 1000, batchSize: e.EMBEDDINGS_BATCH_SIZE,
        }
      : null,
    rerank: e.RERANK_BASE_URL
      ? { baseUrl: e.RERANK_BASE_URL, model: e.RERANK_MODEL!, apiKey: e.RERANK_API_KEY, topN: e.RERANK_TOP_N, timeoutMs: e.RERANK_TIMEOUT_SECONDS * 1000 }
      : null,
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
