import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmbeddedPostgres } from '../../runners/postgres/embedded.ts';
import { freePort } from '../helpers/ephemeral.ts';

// The embedded PostgreSQL of `npm start` (runners/postgres/embedded.ts), started here in a directory of its
// own whether or not the suite runs against DATABASE_URL: the suite's database may be any server.

let dataDir: string;
const logs: string[] = [];

beforeAll(async () => {
  dataDir = await mkdtemp(path.join(os.tmpdir(), 'cairn-embedded-'));
  await chmod(dataDir, 0o755); // as root, the database's own user must be able to enter it
});
afterAll(async () => {
  await rm(dataDir, { recursive: true, force: true });
});

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

const start = async () => startEmbeddedPostgres({ dataDir, port: await freePort(), database: 'cairn', log: (m) => logs.push(m) });

describe('embedded PostgreSQL', () => {
  it('creates its database, listens on localhost only, sizes its buffer cache to the machine, and keeps its data across restarts', { timeout: 120_000 }, async () => {
    const first = await start();
    try {
      const settings = await withClient(first.url, async (c) => {
        await c.query('create table kept (note text)');
        await c.query("insert into kept values ('still here')");
        const { rows } = await c.query<{ name: string; setting: string }>(
          "select name, setting from pg_settings where name in ('listen_addresses', 'shared_buffers', 'block_size')",
        );
        return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
      });
      expect(settings.listen_addresses).toBe('127.0.0.1');
      // An eighth of the machine's memory, between 128 MB and 1 GB.
      const expectedMb = Math.min(1024, Math.max(128, Math.floor(os.totalmem() / 8 / 2 ** 20)));
      expect((Number(settings.shared_buffers) * Number(settings.block_size)) / 2 ** 20).toBe(expectedMb);
    } finally {
      await first.stop();
    }

    const second = await start();
    try {
      const rows = await withClient(second.url, async (c) => (await c.query<{ note: string }>('select note from kept')).rows);
      expect(rows).toEqual([{ note: 'still here' }]);
    } finally {
      await second.stop();
    }
    expect(logs.filter((m) => m.startsWith('Initialising PostgreSQL'))).toHaveLength(1);
  });
});
