import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import type { Orm } from '../../platform/db/orm.ts';

// Accounts and live file uploads for the tests of how ingest shares the worker between accounts.

/** A new account (1,000 ingests a day) and the headers of an ingest key of it. */
export async function ingestAccount(orm: Orm): Promise<Record<string, string>> {
  const defaults = { ...loadConfig({}).accountDefaults, ingestDailyLimit: 1000 };
  const account = await createAccount(orm.em.fork(), defaults, { email: `i-${randomUUID()}@cairn.local`, password: 'a long enough password' });
  const { secret } = await createApiKey(orm.em.fork(), account.id, { name: 'k', scopes: ['ingest'], maxPreset: 'accuracy' });
  return { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
}

/** A live file ingest: the queued job's id. */
export async function submitFile(baseUrl: string, auth: Record<string, string>, file: { filename: string; contentType: string; bytes: Buffer }): Promise<string> {
  const res = await fetch(`${baseUrl}/v1/ingest/file`, {
    method: 'POST', headers: auth,
    body: JSON.stringify({
      filename: file.filename, contentType: file.contentType, contentBase64: file.bytes.toString('base64'), dryRun: false, datedAt: '2026-11-24', idempotencyKey: `i-${randomUUID()}`,
    }),
  });
  expect(res.status).toBe(202);
  return ((await res.json()) as { job: { id: string } }).job.id;
}
