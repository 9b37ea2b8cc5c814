import http from 'node:http';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { accountHome, HOME_HEADER, rendezvous } from '../../platform/net/affinity.ts';
import { startBalancer, type Balancer, type Upstream } from '../../runners/cluster/balancer.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startApi, testTemporalClient } from '../helpers/services.ts';

// The cluster's balancer (runners/cluster/balancer.ts) in front of two real APIs on one database, over
// real HTTP: accounts stay on their home API and move when it is down; half-sent requests the API
// refuses before reading their body do not hold its sockets; one address holds a bounded number of
// connections.

let db: TestDatabase;
const temporal = testTemporalClient();
let apis: Awaited<ReturnType<typeof startApi>>[];
let upstreams: Upstream[];
const down = new Set<string>();
let balancer: Balancer;
const CAP = 40;

beforeAll(async () => {
  db = await createTestDatabase();
  apis = [await startApi({ orm: db.orm, temporal }), await startApi({ orm: db.orm, temporal })];
  upstreams = apis.map((a, i) => ({ name: `api-${i + 1}`, port: Number(new URL(a.baseUrl).port) }));
  balancer = await startBalancer({
    host: '127.0.0.1', port: 0, upstreams, isUp: (u) => !down.has(u.name), markDown: (u) => void down.add(u.name),
    limits: { connectionsPerClient: CAP },
  });
});
afterAll(async () => {
  await balancer?.close();
  for (const api of apis ?? []) await api.close();
  await temporal.close();
  await db?.drop();
});

const url = (path: string) => `http://127.0.0.1:${balancer.port}${path}`;

async function apiKey(): Promise<{ accountId: string; secret: string }> {
  const account = await createTestAccount(db.orm);
  const { secret } = await createApiKey(db.orm.em.fork(), account.id, { name: 'k', scopes: ['query'], maxPreset: 'efficient' });
  return { accountId: account.id, secret };
}

async function upstreamOf(secret: string): Promise<string> {
  const r = await fetch(url('/v1/access'), { headers: { authorization: `Bearer ${secret}` } });
  expect(r.status).toBe(200);
  expect(r.headers.get(HOME_HEADER)).toBeNull();
  return r.headers.get('x-cairn-upstream')!;
}

/** Opens a connection from `localAddress` and sends a request's headers and part of its body, never the rest. */
function halfSend(localAddress: string, path: string, headers: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ host: '127.0.0.1', port: balancer.port, localAddress }, () => {
      socket.write(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100000\r\n${headers}\r\n{"a":`);
      resolve(socket);
    });
    socket.on('error', reject);
    socket.on('data', () => undefined);
  });
}

describe('the cluster balancer', () => {
  it('sends each account to its home API, the same for every credential of it, and to the next choice while its home is down', async () => {
    const accounts = await Promise.all([1, 2, 3, 4, 5, 6].map(() => apiKey()));
    for (const a of accounts) {
      const home = rendezvous(accountHome(a.accountId), upstreams)!.name;
      await upstreamOf(a.secret); // the first answer teaches the balancer the credential's account
      for (let i = 0; i < 3; i++) expect(await upstreamOf(a.secret)).toBe(home);
      const second = await createApiKey(db.orm.em.fork(), a.accountId, { name: 'k2', scopes: ['query'], maxPreset: 'efficient' });
      await upstreamOf(second.secret);
      expect(await upstreamOf(second.secret)).toBe(home);
    }
    const a = accounts[0]!;
    const home = rendezvous(accountHome(a.accountId), upstreams)!.name;
    down.add(home);
    try {
      expect(await upstreamOf(a.secret)).not.toBe(home);
    } finally {
      down.delete(home);
    }
    expect(await upstreamOf(a.secret)).toBe(home);
  });

  it('answers normal requests while 600 half-sent requests, refused by the API before their body, are still open', async () => {
    // About 300 per upstream (each with its own made-up key), more than the 256 sockets the balancer
    // keeps per upstream; twenty addresses keep each under the per-address cap.
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < 600; i++) {
        const key = `cairn_sk_not-a-key-${i}`;
        sockets.push(await halfSend(`127.0.0.${10 + (i % 20)}`, '/v1/query', `authorization: Bearer ${key}\r\n`));
      }
      const { secret } = await apiKey();
      const answers = await Promise.all([1, 2, 3, 4].map(() =>
        fetch(url('/v1/access'), { headers: { authorization: `Bearer ${secret}` }, signal: AbortSignal.timeout(30_000) })));
      for (const r of answers) expect(r.status).toBe(200);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });

  it(`gives one address at most ${CAP} open connections (503 past it) and leaves other addresses alone`, async () => {
    const sockets: net.Socket[] = [];
    try {
      for (let i = 0; i < CAP; i++) sockets.push(await halfSend('127.0.0.9', '/v1/access', ''));
      const over = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = http.get({ host: '127.0.0.1', port: balancer.port, path: '/readyz', localAddress: '127.0.0.9' }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode!, body }));
        });
        req.on('error', reject);
      });
      expect(over.status).toBe(503);
      expect(JSON.parse(over.body).error.code).toBe('service_unavailable');
      expect((await fetch(url('/readyz'))).status).toBe(200);
    } finally {
      for (const s of sockets) s.destroy();
    }
  });
});
