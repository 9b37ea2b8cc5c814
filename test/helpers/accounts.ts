import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';
import { expect } from 'vitest';
import { SESSION_COOKIE } from '../../api/plugins/auth.ts';
import { createAccount, type CreateAccountInput } from '../../core/auth/accounts.ts';
import { loadConfig } from '../../platform/config.ts';
import type { Orm } from '../../platform/db/orm.ts';

// Helpers for the account, sign-in and API-key tests: a small HTTP client over real fetch that plays
// a browser (session cookie, CSRF header and Origin) or a bearer client (CLI token, API key), accounts
// created through the domain function, and raw SQL to read what the service stored.

// Response bodies are JSON of many shapes; tests assert on them field by field.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** A browser session cookie value, or a bearer credential (CLI session token or API key). */
export type Credential = { cookie: string } | { bearer: string };

export type CallOptions = {
  as?: Credential;
  body?: unknown;
  /**
   * Send the browser CSRF proof (`x-service-csrf: 1` and `Origin` = the server's own origin). Default:
   * on for writes that carry no bearer credential, as a browser page would send them.
   */
  csrf?: boolean;
  /** Extra headers, applied last (they override the ones above). */
  headers?: Record<string, string>;
};

export type ApiResponse = { status: number; headers: Headers; body: Json; setCookies: string[] };

export class ApiClient {
  readonly baseUrl: string;

  constructor(baseUrl: string) {
    this.baseUrl = baseUrl;
  }

  async call(method: string, path: string, opts: CallOptions = {}): Promise<ApiResponse> {
    const headers: Record<string, string> = {};
    const as = opts.as;
    if (as && 'cookie' in as) headers.cookie = `${SESSION_COOKIE}=${as.cookie}`;
    if (as && 'bearer' in as) headers.authorization = `Bearer ${as.bearer}`;
    const write = !['GET', 'HEAD', 'OPTIONS'].includes(method);
    if (opts.csrf ?? (write && !(as && 'bearer' in as))) {
      headers['x-service-csrf'] = '1';
      headers.origin = this.baseUrl;
    }
    if (opts.body !== undefined) headers['content-type'] = 'application/json';
    Object.assign(headers, opts.headers);
    const res = await fetch(`${this.baseUrl}${path}`, {
      method,
      headers,
      body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
    });
    const text = await res.text();
    return {
      status: res.status,
      headers: res.headers,
      body: text ? JSON.parse(text) : undefined,
      setCookies: res.headers.getSetCookie(),
    };
  }

  get(path: string, opts?: CallOptions) {
    return this.call('GET', path, opts);
  }
  post(path: string, opts?: CallOptions) {
    return this.call('POST', path, opts);
  }
  delete(path: string, opts?: CallOptions) {
    return this.call('DELETE', path, opts);
  }
}

/** The four ways a browser write can fail the CSRF check (spec 4: header literal `1` and an allowed Origin). */
export function badCsrfVariants(baseUrl: string): { label: string; headers: Record<string, string> }[] {
  return [
    { label: 'no x-service-csrf header', headers: { origin: baseUrl } },
    { label: "x-service-csrf '0'", headers: { 'x-service-csrf': '0', origin: baseUrl } },
    { label: 'an Origin that is not allowed', headers: { 'x-service-csrf': '1', origin: 'https://evil.example' } },
    { label: 'no Origin header', headers: { 'x-service-csrf': '1' } },
  ];
}

export type SetCookie = { name: string; value: string; attributes: Map<string, string> };

/** Parses one Set-Cookie header; attribute names are lower-cased (`httponly` → ''). */
export function parseSetCookie(header: string): SetCookie {
  const [pair, ...attrs] = header.split(';').map((s) => s.trim());
  const eq = pair!.indexOf('=');
  const attributes = new Map<string, string>();
  for (const a of attrs) {
    const i = a.indexOf('=');
    if (i < 0) attributes.set(a.toLowerCase(), '');
    else attributes.set(a.slice(0, i).toLowerCase(), a.slice(i + 1));
  }
  return { name: pair!.slice(0, eq), value: decodeURIComponent(pair!.slice(eq + 1)), attributes };
}

/** The `service_session` Set-Cookie of a response, parsed, or undefined when there is none. */
export function sessionSetCookie(res: ApiResponse): SetCookie | undefined {
  const found = res.setCookies.map(parseSetCookie).filter((c) => c.name === SESSION_COOKIE);
  expect(found.length).toBeLessThanOrEqual(1);
  return found[0];
}

/** Asserts the response clears the session cookie (empty value, expired) with the same attributes. */
export function expectCookieCleared(res: ApiResponse) {
  const c = sessionSetCookie(res);
  expect(c, 'a Set-Cookie clearing service_session').toBeDefined();
  expect(c!.value).toBe('');
  const expires = c!.attributes.get('expires');
  const maxAge = c!.attributes.get('max-age');
  expect(maxAge === '0' || (expires !== undefined && new Date(expires).getTime() <= Date.now())).toBe(true);
  expect(c!.attributes.get('path')).toBe('/');
  expect(c!.attributes.has('httponly')).toBe(true);
}

export function expectError(res: ApiResponse, status: number, code: string) {
  expect({ status: res.status, body: res.body }).toEqual({
    status,
    body: { error: { code, message: expect.any(String), requestId: expect.any(String) } },
  });
}

export const sha256 = (s: string) => createHash('sha256').update(s, 'utf8').digest('hex');

export const PASSWORD = 'correct horse battery staple';

export const uniqueEmail = (tag = 'user') => `${tag}-${randomBytes(5).toString('hex')}@example.com`;

export type TestAccount = { id: string; email: string; password: string };

/** An account made through the domain function (as `admin account create` does). */
export async function createTestAccount(orm: Orm, input: Partial<CreateAccountInput> = {}): Promise<TestAccount> {
  const email = input.email ?? uniqueEmail();
  const password = input.password ?? PASSWORD;
  const account = await createAccount(orm.em.fork(), loadConfig({}).accountDefaults, { ...input, email, password });
  return { id: account.id, email: account.email, password };
}

/** Signs in over HTTP and returns the session cookie's value. */
export async function signIn(client: ApiClient, account: { email: string; password: string }): Promise<string> {
  const res = await client.post('/v1/auth/login', { body: { email: account.email, password: account.password } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const cookie = sessionSetCookie(res);
  expect(cookie?.value).toBeTruthy();
  return cookie!.value;
}

/** The whole CLI device flow: start, approve with the browser session, exchange. Returns the CLI token. */
export async function cliSignIn(client: ApiClient, cookie: string, clientName = 'test cli'): Promise<string> {
  const device = await client.post('/v1/auth/cli/device', { body: { clientName } });
  expect(device.status, JSON.stringify(device.body)).toBe(201);
  const approve = await client.post('/v1/auth/cli/device/approve', {
    as: { cookie },
    body: { userCode: device.body.userCode },
  });
  expect(approve.status, JSON.stringify(approve.body)).toBe(200);
  const token = await client.post('/v1/auth/cli/token', { body: { deviceCode: device.body.deviceCode } });
  expect(token.status, JSON.stringify(token.body)).toBe(200);
  return token.body.cliSession.token as string;
}

export type CreatedKey = { id: string; secret: string; record: Json };

/** Creates an API key through the account API with the given credential. */
export async function createKey(
  client: ApiClient,
  as: Credential,
  body: { name?: string; scopes?: string[]; maxPreset?: string; audiences?: string[] } = {},
): Promise<CreatedKey> {
  const res = await client.post('/v1/account/api-keys', { as, body: { name: 'test key', ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return { id: res.body.apiKey.id, secret: res.body.secret, record: res.body.apiKey };
}

/** Raw SQL against a test database (own small pool, `$1` placeholders). */
export function sqlClient(url: string) {
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  // pool.end() resolves before its connections have closed; the test database's drop (with force)
  // can then end one, which the pool reports here. Without a listener that report is an uncaught
  // exception that fails the run; a query's own failure still rejects its promise.
  pool.on('error', () => {});
  return {
    async query<T = Json>(text: string, params: unknown[] = []): Promise<T[]> {
      return (await pool.query(text, params)).rows as T[];
    },
    async count(text: string, params: unknown[] = []): Promise<number> {
      const rows = (await pool.query(`select count(*)::int as n from (${text}) q`, params)).rows;
      return rows[0].n as number;
    },
    close: () => pool.end(),
  };
}
export type Sql = ReturnType<typeof sqlClient>;

/** Tables that hold account data, found in the catalogue so new tables are covered without edits. */
export async function accountTables(sql: Sql): Promise<string[]> {
  const rows = await sql.query<{ t: string }>(
    `select table_name as t from information_schema.columns
      where table_schema = 'public' and column_name = 'account_id' order by table_name`,
  );
  return rows.map((r) => r.t);
}

/** Row count and a digest of every row of the account, table by table (`count:md5`). */
export async function accountSnapshot(sql: Sql, accountId: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const t of await accountTables(sql)) {
    const [row] = await sql.query<{ d: string | null; n: number }>(
      `select md5(coalesce(string_agg(x::text, '|' order by x::text), '')) as d, count(*)::int as n from "${t}" x where account_id = $1`,
      [accountId],
    );
    out[t] = `${row!.n}:${row!.d}`;
  }
  return out;
}

/**
 * Polls until `probe` returns a truthy value, for effects the service completes after answering (a
 * fire-and-forget last-used write). Bounded: gives up after `timeoutMs`, failing with `what`.
 */
export async function eventually<T>(probe: () => Promise<T>, what: string, timeoutMs = 10_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
