import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOrm } from '../../platform/db/orm.ts';
import { createTemporalClient } from '../../temporal/client.ts';
import { freePort } from '../helpers/ephemeral.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, testTemporalClient } from '../helpers/services.ts';

let db: TestDatabase;
beforeAll(async () => {
  db = await createTestDatabase();
});
afterAll(() => db.drop());

describe('health and readiness over real HTTP', () => {
  it('/healthz is 200 and /readyz is 200 when PostgreSQL and Temporal answer', async () => {
    const temporal = testTemporalClient();
    const api = await startApi({ orm: db.orm, temporal });
    try {
      const live = await fetch(`${api.baseUrl}/healthz`);
      expect(live.status).toBe(200);
      const res = await fetch(`${api.baseUrl}/readyz`);
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({
        status: 'ready',
        checks: { postgres: { ok: true }, temporal: { ok: true } },
      });
    } finally {
      await api.close();
      await temporal.close();
    }
  });

  it('/readyz is 503 naming Temporal when Temporal is unreachable', async () => {
    const temporal = createTemporalClient(`127.0.0.1:${await freePort()}`, 'default');
    const api = await startApi({ orm: db.orm, temporal });
    try {
      const res = await fetch(`${api.baseUrl}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(body.checks.postgres.ok).toBe(true);
      expect(body.checks.temporal).toMatchObject({ ok: false });
      expect(body.error).toMatchObject({ code: 'service_unavailable', requestId: expect.any(String) });
      expect(body.error.message).toContain('temporal');
      expect(body.error.message).not.toContain('postgres');
      // /healthz stays 200: the process is alive, only a dependency is missing.
      expect((await fetch(`${api.baseUrl}/healthz`)).status).toBe(200);
    } finally {
      await api.close();
      await temporal.close();
    }
  });

  it('/readyz is 503 naming PostgreSQL when the database is unreachable', async () => {
    const deadOrm = await createOrm(`postgres://postgres@127.0.0.1:${await freePort()}/none`);
    const temporal = testTemporalClient();
    const api = await startApi({ orm: deadOrm, temporal });
    try {
      const res = await fetch(`${api.baseUrl}/readyz`);
      expect(res.status).toBe(503);
      const body = (await res.json()) as any; // eslint-disable-line @typescript-eslint/no-explicit-any
      expect(body.checks.postgres.ok).toBe(false);
      expect(body.checks.temporal.ok).toBe(true);
      expect(body.error.message).toContain('postgres');
      expect(JSON.stringify(body)).not.toContain('ECONNREFUSED');
    } finally {
      await api.close();
      await temporal.close();
      await deadOrm.close();
    }
  });
});

describe('request bodies', () => {
  it('a body still arriving after REQUEST_TIMEOUT_SECONDS is answered 408 and its connection closed', { timeout: 120_000 }, async () => {
    const temporal = testTemporalClient();
    const slow = await startApi({ orm: db.orm, temporal, env: { REQUEST_TIMEOUT_SECONDS: '1' } });
    try {
      const { port } = new URL(slow.baseUrl);
      const socket = net.connect(Number(port), '127.0.0.1');
      let answer = '';
      socket.on('data', (c) => (answer += String(c)));
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      // Headers promise 1,000 bytes; a few come, then nothing (a client holding the connection open).
      socket.write('POST /v1/auth/cli/device HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n{"clientName":');
      await closed; // Node checks every few seconds; the test's own timeout is the deadline
      expect(answer).toMatch(/^HTTP\/1\.1 408/);
    } finally {
      await slow.close();
      await temporal.close();
    }
  });
});
