import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The Python client (packages/python, standard library only) against the real API and worker: its own
// unittest suite, run with the machine's python3.

const SUITE = fileURLToPath(new URL('../../packages/python/tests/test_client.py', import.meta.url));
let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;

beforeAll(async () => {
  db = await createTestDatabase();
  api = await startApi({ orm: db.orm, temporal, taskQueue });
  worker = await startWorker({ orm: db.orm, taskQueue });
});
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await temporal.close();
  await db?.drop();
});

it('the Python client ingests, writes memory, queries and raises typed errors, sync and async', async () => {
  const account = await createTestAccount(db.orm);
  const { secret } = await createApiKey(db.orm.em.fork(), account.id, { name: 'py', scopes: ['ingest', 'query', 'memory.read', 'memory.write'], maxPreset: 'accuracy' });
  const child = spawn('python3', [SUITE], { env: { ...process.env, CAIRN_URL: api.baseUrl, CAIRN_API_KEY: secret }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout.on('data', (c: Buffer) => (output += c.toString()));
  child.stderr.on('data', (c: Buffer) => (output += c.toString()));
  const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
  expect(code, output).toBe(0);
  expect(output).toMatch(/Ran 3 tests/);
}, 300_000);
