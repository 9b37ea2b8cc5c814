import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { createApiKey } from '../../../core/auth/api-keys.ts';
import type { Scope } from '../../../core/contracts/account.ts';
import type { Orm } from '../../../platform/db/orm.ts';
import { createTestAccount, type Json } from '../../helpers/accounts.ts';

// Shared by the native-memory test files: a bearer client for /v1/workspaces/default and polling.

export type Res = { status: number; body: Json; text: string; headers: Headers; setCookies: string[] };

export function memoryClient(baseUrl: string) {
  async function call(bearer: string, method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Res> {
    const res = await fetch(`${baseUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${bearer}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : undefined, text, headers: res.headers, setCookies: res.headers.getSetCookie() };
  }
  const mem = (bearer: string, method: string, sub: string, body?: unknown) => call(bearer, method, `/v1/workspaces/default${sub}`, body);

  async function waitEvent(bearer: string, eventId: string, timeoutMs = 30_000): Promise<Json> {
    const deadline = Date.now() + timeoutMs;
    for (let delay = 25; ; delay = Math.min(delay * 2, 250)) {
      const r = await mem(bearer, 'GET', `/events/${eventId}`);
      expect(r.status, r.text).toBe(200);
      if (!['queued', 'running'].includes(r.body.status)) return r.body;
      if (Date.now() > deadline) throw new Error(`event ${eventId} still ${r.body.status}`);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  /** Creates peer and session, writes one user message and waits for the event; returns the event. */
  async function write(bearer: string, peer: string, session: string, content: string, extra: Json = {}): Promise<Json> {
    expect((await mem(bearer, 'POST', '/peers', { id: peer })).status).toBe(200);
    expect((await mem(bearer, 'POST', '/sessions', { id: session })).status).toBe(200);
    const r = await mem(bearer, 'POST', `/sessions/${encodeURIComponent(session)}/messages`, { peer_id: peer, messages: [{ role: 'user', content }], ...extra });
    expect(r.status, r.text).toBe(200);
    return waitEvent(bearer, r.body.event_id);
  }

  return { call, mem, waitEvent, write };
}

export const tag = (prefix: string) => `${prefix}-${randomUUID().slice(0, 8)}`;

export async function accountWithKeys(orm: Orm, scopeSets: Record<string, Scope[]>) {
  const account = await createTestAccount(orm);
  const keys: Record<string, string> = {};
  for (const [name, scopes] of Object.entries(scopeSets)) {
    keys[name] = (await createApiKey(orm.em.fork(), account.id, { name, scopes, maxPreset: 'accuracy' })).secret;
  }
  return { account, keys };
}
