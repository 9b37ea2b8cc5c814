import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { runAdmin } from '../helpers/admin.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// Operators can see and filter (issue 24): a failed job is found as failed, a memory event's batch by the event id,
// an account's work by the account, through the Temporal visibility queries the UI runs.

let db: TestDatabase;
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
const temporal = testTemporalClient();
let auth: Record<string, string>;
let accountId: string;

beforeAll(async () => {
  db = await createTestDatabase();
  const taskQueue = uniqueTaskQueue();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
  const account = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, { email: `sa-${randomUUID()}@cairn.local`, password: 'a long enough password' });
  accountId = account.id;
  const { secret } = await createApiKey(db.orm.em.fork(), account.id, { name: 'k', scopes: ['ingest', 'memory.read', 'memory.write'], maxPreset: 'accuracy' });
  auth = { authorization: `Bearer ${secret}`, 'content-type': 'application/json' };
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

const post = async (path: string, body: unknown) => (await fetch(`${api.baseUrl}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) })).json() as Promise<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any

async function ids(query: string): Promise<string[]> {
  const out: string[] = [];
  for await (const w of temporal.client.workflow.list({ query })) out.push(w.workflowId);
  return out;
}

describe('search attributes', () => {
  it('find a failed ingest job as failed, by account and kind, with its content type', async () => {
    const bad = await post('/v1/ingest/file', {
      filename: 'empty.md', contentType: 'text/markdown', contentBase64: Buffer.from('   \n').toString('base64'),
      dryRun: false, datedAt: '2026-11-24', idempotencyKey: `sa-${randomUUID()}`,
    });
    const good = await post('/v1/ingest/file', {
      filename: 'note.md', contentType: 'text/markdown', contentBase64: Buffer.from('# Note\n\nThe launch moved to March.').toString('base64'),
      dryRun: false, datedAt: '2026-11-24', idempotencyKey: `sa-${randomUUID()}`,
    });
    const failedQuery = `CairnAccount = "${accountId}" AND CairnStatus = "failed"`;
    await expect.poll(() => ids(failedQuery), { timeout: 60_000, interval: 500 }).toEqual([`ingest-${bad.job.id}`]);
    await expect.poll(() => ids(`CairnAccount = "${accountId}" AND CairnStatus = "succeeded" AND CairnKind = "ingest-file" AND CairnContentType = "text/markdown"`),
      { timeout: 60_000, interval: 500 }).toEqual([`ingest-${good.job.id}`]);
  });

  it('find the batch that processed a memory event by the event id, and by its account', async () => {
    await post('/v1/workspaces/default/peers', { id: 'ana' });
    await post('/v1/workspaces/default/sessions', { id: 'chat' });
    const receipt = await post('/v1/workspaces/default/sessions/chat/messages', { peer_id: 'ana', messages: [{ role: 'user', content: 'I live in Orlavik.' }] });
    // The operator's way from an event id to its batch: `npm run admin -- memory event --id <event id>`.
    let shown: Record<string, any> = {}; // eslint-disable-line @typescript-eslint/no-explicit-any
    await expect.poll(async () => {
      shown = (await runAdmin(db.url, 'memory', 'event', '--id', receipt.event_id)).json as typeof shown;
      return shown?.status;
    }, { timeout: 60_000, interval: 500 }).toBe('succeeded');
    expect(shown).toMatchObject({ id: receipt.event_id, accountId, kind: 'add_messages', workflowId: `memory-batch-${shown.batchId}` });
    await expect.poll(() => ids(`WorkflowId = "${shown.workflowId}" AND CairnKind = "memory-batch" AND CairnStatus = "succeeded"`),
      { timeout: 60_000, interval: 500 }).toHaveLength(1);
    // And from an account to the batches that held its events.
    await expect.poll(() => ids(`CairnAccounts = "${accountId}" AND CairnKind = "memory-batch"`), { timeout: 60_000, interval: 500 }).toContain(shown.workflowId);
    const unknown = await runAdmin(db.url, 'memory', 'event', '--id', randomUUID());
    expect(unknown.code).toBe(64);
    expect(unknown.stderr).toMatch(/No memory event/);
  });
});
