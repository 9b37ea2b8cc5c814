import { randomBytes } from 'node:crypto';
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { expect } from 'vitest';
import { SESSION_COOKIE } from '../../api/plugins/auth.ts';

/**
 * The MCP SDK's OAuth client provider interface, kept in memory as an MCP client would keep it on
 * disk. The redirect target is never contacted: the "browser" below stops at the redirect and hands
 * the code back, as a real client's loopback listener would.
 */
export class MemoryOAuthClient implements OAuthClientProvider {
  readonly redirectUrl = 'http://127.0.0.1:9/oauth/callback';
  readonly clientMetadata: OAuthClientMetadata;
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;

  /**
   * A client without a configured scope, like the SDK's examples: the SDK then requests the scopes
   * the protected-resource metadata lists. Names differ per instance unless given, so that tests do
   * not see each other's registrations grouped into one connected application.
   */
  constructor(name = `Test MCP client ${randomBytes(3).toString('hex')}`, opts: { scope?: string } = {}) {
    this.clientMetadata = {
      client_name: name,
      redirect_uris: [this.redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
      ...(opts.scope ? { scope: opts.scope } : {}),
    };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** A minimal browser: follows redirects by hand on the API's origin, keeping cookies per name. */
export class Browser {
  readonly cookies = new Map<string, string>();
  readonly origin: string;
  constructor(origin: string, sessionCookie?: string) {
    this.origin = origin;
    if (sessionCookie) this.cookies.set(SESSION_COOKIE, sessionCookie);
  }

  async request(url: string, init: { method?: string; form?: Record<string, string | string[]> } = {}) {
    const headers: Record<string, string> = {};
    if (this.cookies.size) headers.cookie = [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ');
    let body: string | undefined;
    if (init.form) {
      const params = new URLSearchParams();
      for (const [k, v] of Object.entries(init.form)) for (const one of Array.isArray(v) ? v : [v]) params.append(k, one);
      body = params.toString();
      headers['content-type'] = 'application/x-www-form-urlencoded';
      headers.origin = this.origin; // what a browser sends with a form post
    }
    const res = await fetch(new URL(url, this.origin), { method: init.method ?? (init.form ? 'POST' : 'GET'), headers, body, redirect: 'manual' });
    for (const c of res.headers.getSetCookie()) {
      const [pair] = c.split(';');
      const eq = pair!.indexOf('=');
      const name = pair!.slice(0, eq);
      const value = pair!.slice(eq + 1);
      if (value === '' || /expires=Thu, 01 Jan 1970/i.test(c)) this.cookies.delete(name);
      else this.cookies.set(name, value);
    }
    return { status: res.status, location: res.headers.get('location'), text: await res.text() };
  }

  /** GET and follow redirects on our origin until a page, or a redirect leaving it (the client callback). */
  async follow(url: string) {
    let res = await this.request(url);
    for (let i = 0; i < 10 && res.location && new URL(res.location, this.origin).origin === this.origin; i++) {
      res = await this.request(res.location);
    }
    return res;
  }
}

/** The browser part: open the authorization URL signed in, consent with the given scopes, return the callback URL. */
export async function consent(browser: Browser, authorizationUrl: URL, scopes: string[]): Promise<URL> {
  const page = await browser.follow(authorizationUrl.href);
  expect(page.status, page.text).toBe(200);
  expect(page.text).toMatch(/Connect .+ to your memory\?/);
  const action = /<form method="post" action="([^"]+)"/.exec(page.text)![1]!;
  const done = await browser.request(action, { form: { scope: scopes } });
  expect(done.status, done.text).toBe(303);
  const callback = await browser.follow(done.location!);
  expect(callback.status).toBe(303);
  const url = new URL(callback.location!);
  expect(url.origin + url.pathname).toBe('http://127.0.0.1:9/oauth/callback');
  return url;
}

/**
 * The whole first connection of the MCP SDK client: 401 → discovery → registration → authorization
 * (signed in with `cookie`, consenting to `scopes`) → code → token; returns a connected client.
 */
export async function connectWithOauth(opts: {
  mcpUrl: string;
  baseUrl: string;
  cookie: string;
  scopes: string[];
  oauth?: MemoryOAuthClient;
  fetch?: typeof fetch;
}) {
  const oauth = opts.oauth ?? new MemoryOAuthClient();
  const transportFor = () => new StreamableHTTPClientTransport(new URL(opts.mcpUrl), { authProvider: oauth, fetch: opts.fetch });
  const first = new Client({ name: 'oauth-test', version: '1.0.0' });
  const transport = transportFor();
  await expect(first.connect(transport)).rejects.toThrow(/Unauthorized/i);
  expect(oauth.info?.client_id, 'dynamic client registration').toBeTruthy();
  expect(oauth.authorizationUrl).toBeDefined();
  const callback = await consent(new Browser(opts.baseUrl, opts.cookie), oauth.authorizationUrl!, opts.scopes);
  await transport.finishAuth(callback.searchParams.get('code')!);
  expect(oauth.saved?.access_token).toBeTruthy();
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(transportFor());
  return { oauth, client };
}
