import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { createTestAccount } from '../helpers/accounts.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { memoryRows } from '../helpers/memory-rows.ts';
import { startRerankServer } from '../helpers/rerank-server.ts';
import { startApi, testTemporalClient } from '../helpers/services.ts';

// The optional rerank provider (RERANK_*) through POST /v1/query, against a local server speaking the
// rerank protocol: accuracy queries take its order for their best hits, efficient ones never ask it,
// a failing provider leaves the lexical order and says so, and without it nothing is sent anywhere.

let db: TestDatabase;
const temporal = testTemporalClient();
let provider: Awaited<ReturnType<typeof startRerankServer>>;
let api: Awaited<ReturnType<typeof startApi>>;
let plain: Awaited<ReturnType<typeof startApi>>;
let key: string;

const MESSAGES = [
  'The ferry to Skarholm leaves at nine; the ferry back leaves at five, ferry tickets at the ferry office.',
  'Dana said the ferry to Skarholm is cheaper on Sundays, and the harbour cafe sells pastries.',
  'Booked: the ferry to Skarholm on the 14th, cabin 12, with a bicycle.',
];

beforeAll(async () => {
  db = await createTestDatabase();
  provider = await startRerankServer(['booked', 'cabin', 'bicycle']);
  api = await startApi({ orm: db.orm, temporal, env: { RERANK_BASE_URL: provider.baseUrl, RERANK_MODEL: 'rerank-test', RERANK_API_KEY: 'rk-secret' } });
  plain = await startApi({ orm: db.orm, temporal });
  const account = await createTestAccount(db.orm);
  key = (await createApiKey(db.orm.em.fork(), account.id, { name: 'k', scopes: ['query', 'memory.read'], maxPreset: 'accuracy' })).secret;
  const rows = memoryRows(db.orm);
  const [peerId, sessionId] = [await rows.peer(account.id, 'dana'), await rows.session(account.id, 'trip')];
  for (const content of MESSAGES) await rows.message(account.id, { peerId, sessionId, content });
});
afterAll(async () => {
  await api?.close();
  await plain?.close();
  await provider?.close();
  await temporal.close();
  await db?.drop();
});

async function evidence(baseUrl: string, preset: 'accuracy' | 'efficient') {
  const res = await fetch(`${baseUrl}/v1/query`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ mode: 'evidence', preset, query: 'ferry to Skarholm', idempotencyKey: crypto.randomUUID() }),
  });
  expect(res.status).toBe(200);
  return (await res.json()) as { evidence: { text: string }[]; limitations: { code: string }[] };
}

describe('the rerank provider', () => {
  it('orders an accuracy query\'s best hits as the provider ranks them; an efficient query does not ask it', async () => {
    const lexical = await evidence(plain.baseUrl, 'accuracy');
    expect(lexical.evidence[0]!.text).not.toContain('Booked');
    const reranked = await evidence(api.baseUrl, 'accuracy');
    expect(reranked.evidence.map((e) => e.text)).toHaveLength(lexical.evidence.length);
    expect(reranked.evidence[0]!.text).toContain('Booked');
    expect(provider.requests).toHaveLength(1);
    expect(provider.requests[0]).toMatchObject({ model: 'rerank-test', query: 'ferry to Skarholm', authorization: 'Bearer rk-secret' });
    expect(provider.requests[0]!.documents).toHaveLength(lexical.evidence.length);
    await evidence(api.baseUrl, 'efficient');
    expect(provider.requests).toHaveLength(1);
  });

  it('when the provider fails, the lexical order stands and the result says so', async () => {
    provider.setFail(true);
    try {
      const lexical = await evidence(plain.baseUrl, 'accuracy');
      const failed = await evidence(api.baseUrl, 'accuracy');
      expect(failed.evidence.map((e) => e.text)).toEqual(lexical.evidence.map((e) => e.text));
      expect(failed.limitations.map((l) => l.code)).toContain('rerank_unavailable');
      expect(lexical.limitations.map((l) => l.code)).not.toContain('rerank_unavailable');
    } finally {
      provider.setFail(false);
    }
  });
});
