import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createAccount } from '../../core/auth/accounts.ts';
import { createApiKey } from '../../core/auth/api-keys.ts';
import { loadConfig } from '../../platform/config.ts';
import { ingestWorkflowId } from '../../temporal/starts.ts';
import { CAIRN_ACCOUNT, CAIRN_CONTENT_TYPE, CAIRN_STATUS } from '../../workflows/search-attributes.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startFixtureServer } from '../helpers/fixture-server.ts';
import { memoryLogger, startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

let db: TestDatabase;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let canary: Awaited<ReturnType<typeof startFixtureServer>>;
let key: string;
let otherKey: string;
let accountId: string;
const logs = memoryLogger('info');

const fact = 'The launch codename of project KestrelQ7 is quasar41c0ffee.';
const page = `<!doctype html><html><head><title>Field notes for project KestrelQ7</title><script>var secret = 1;</script></head>
<body><nav>Home | About</nav><h1>Project KestrelQ7</h1><p>${fact}</p>
<p>Project KestrelQ7 was founded in the harbour town of Orlavik in 1987 and studies migrating terns.</p></body></html>`;
const today = new Date().toISOString().slice(0, 10);

async function newKey(scopes: ('ingest' | 'query')[] = ['ingest', 'query']) {
  const a = await createAccount(db.orm.em.fork(), loadConfig({}).accountDefaults, {
    email: `i-${randomUUID()}@example.test`,
    password: 'a-long-enough-password',
    ingestDailyLimit: 500,
  });
  const { secret } = await createApiKey(db.orm.em.fork(), a.id, { name: 'k', scopes, maxPreset: 'accuracy' });
  return { secret, accountId: a.id };
}

async function call(method: string, path: string, body?: unknown, bearer = key) {
  const res = await fetch(`${api.baseUrl}${path}`, {
    method,
    headers: { authorization: `Bearer ${bearer}`, ...(body ? { 'content-type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: (text ? JSON.parse(text) : undefined) as Json };
}

async function waitJob(id: string, bearer = key): Promise<Json> {
  for (let i = 0; i < 240; i++) {
    const r = await call('GET', `/v1/ingest/jobs/${id}`, undefined, bearer);
    if (r.body.job.status !== 'queued') return r.body.job;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`job ${id} did not finish`);
}

const sql = <T = Json>(text: string, params: unknown[] = []) => db.orm.em.fork().getConnection().execute<T[]>(text, params);
const live = (extra: Json) => ({ dryRun: false, datedAt: today, idempotencyKey: `k-${randomUUID()}`, ...extra });
const file = (filename: string, contentType: string, content: string | Buffer, extra: Json = {}) => ({
  filename, contentType, contentBase64: Buffer.from(content).toString('base64'), ...extra,
});

beforeAll(async () => {
  db = await createTestDatabase();
  canary = await startFixtureServer({ '/hit': { body: 'canary' } });
  fixtures = await startFixtureServer({
    '/page.html': { type: 'text/html; charset=utf-8', body: page },
    '/facts.md': { type: 'text/markdown', body: `# Project KestrelQ7\n\n${fact}\n` },
    '/facts.json': { type: 'application/json', body: JSON.stringify({ project: 'KestrelQ7', facts: [fact] }) },
    '/redirect': { status: 302, headers: { location: `${'http://127.0.0.1'}:0/hit` } },
    '/missing': { status: 404 },
  });
  fixtures.routes['/redirect'] = { status: 302, headers: { location: `${canary.origin}/hit` } };
  const env = { INGEST_URL_ALLOWLIST: fixtures.origin };
  api = await startApi({ orm: db.orm, temporal, taskQueue, env, logger: logs.logger });
  worker = await startWorker({ orm: db.orm, taskQueue, urlAllowlist: [fixtures.origin], logger: logs.logger });
  ({ secret: key, accountId } = await newKey());
  ({ secret: otherKey } = await newKey());
});
afterAll(async () => {
  await worker?.stop();
  await api?.close();
  await fixtures?.close();
  await canary?.close();
  await temporal.close();
  await db?.drop();
});

describe('dry runs', () => {
  it('a URL dry run (the default) returns a plan and persists nothing', async () => {
    const before = await sql('select count(*)::int as n from ingest_job');
    const r = await call('POST', '/v1/ingest/url', { url: `${fixtures.origin}/page.html` });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ schemaVersion: 'service-url-ingest-plan-v1', mode: 'dry-run' });
    expect(r.body.plan).toMatchObject({ title: expect.stringContaining('KestrelQ7'), contentType: 'text/html', estimatedCredits: 0 });
    expect(r.body.plan.records.facts).toBeGreaterThanOrEqual(1);
    expect(r.body.plan.summary).toEqual(expect.any(String));
    expect(await sql('select count(*)::int as n from ingest_job')).toEqual(before);
  });

  it.each([
    ['notes.md', 'text/markdown', `# Notes\n\n${fact}\n`],
    ['notes.txt', 'text/plain', `${fact}\n\nSecond paragraph about terns.`],
    ['notes.html', 'text/html', page],
    ['notes.json', 'application/json', JSON.stringify({ a: { b: [fact] } })],
  ])('a file dry run of %s returns a file plan', async (name, type, content) => {
    const r = await call('POST', '/v1/ingest/file', file(name, type, content));
    expect(r.status).toBe(200);
    expect(r.body.schemaVersion).toBe('service-file-ingest-plan-v1');
    expect(r.body.plan.records.total).toBeGreaterThan(0);
  });

  it('a URL answering 404 is a refused source (502 ingest_job_failed), logged at warn without a stack, live or dry', async () => {
    const r = await call('POST', '/v1/ingest/url', { url: `${fixtures.origin}/missing` });
    expect(r.status).toBe(502);
    expect(r.body.error).toMatchObject({ code: 'ingest_job_failed', message: expect.stringContaining('404') });
    const line = (id: string) => logs.lines.map((l) => JSON.parse(l)).filter((l) => l.reqId === id || l.msg?.includes(id));
    const logged = line(r.body.error.requestId);
    expect(logged.filter((l) => l.code === 'ingest_job_failed').map((l) => l.level)).toEqual([40]);
    expect(JSON.stringify(logged)).not.toMatch(/"stack"|"level":50/);

    const queued = await call('POST', '/v1/ingest/url', live({ url: `${fixtures.origin}/missing` }));
    const job = await waitJob(queued.body.job.id);
    expect(job).toMatchObject({ status: 'failed', sourceUrl: `${fixtures.origin}/missing`, failure: { retryable: false } });
    // The execution itself failed (red in the Temporal UI), with the job's message, after recording it.
    const handle = temporal.client.workflow.getHandle(ingestWorkflowId(job.id));
    const ended = await handle.result().then(() => null, (err: unknown) => err as { cause?: { message?: string } });
    expect(ended?.cause?.message).toContain('404');
    const described = await handle.describe();
    expect(described.status.name).toBe('FAILED');
    expect(described.typedSearchAttributes.get(CAIRN_STATUS)).toBe('failed');
    const activity = logs.lines.map((l) => JSON.parse(l)).filter((l) => l.workflowId === ingestWorkflowId(job.id) && l.msg === 'activity failed');
    expect(activity.length).toBeGreaterThan(0);
    for (const l of activity) {
      expect(l.level).toBe(40);
      expect(l.failure.message).toContain('404');
      expect(JSON.stringify(l)).not.toContain('"stack"');
    }
  });

  it('a file whose bytes do not match its declared type is rejected', async () => {
    const r = await call('POST', '/v1/ingest/file', file('fake.pdf', 'application/pdf', 'not a pdf at all'));
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_ingest_request');
  });

  it('over 50,000,000 decoded bytes is 413 payload_too_large and nothing is created', async () => {
    const b64 = 'A'.repeat(Math.ceil((50_000_001 * 4) / 3 / 4) * 4);
    const r = await call('POST', '/v1/ingest/file', { filename: 'big.txt', contentType: 'text/plain', contentBase64: b64, ...live({}) });
    expect(r.status).toBe(413);
    expect(r.body.error.code).toBe('payload_too_large');
    expect(await sql('select count(*)::int as n from ingest_job where account_id = ? and filename = ?', [accountId, 'big.txt'])).toEqual([{ n: 0 }]);
  });
});

describe('live ingest', () => {
  it('queues a URL job (202, quota headers) that succeeds with records citing exact spans', async () => {
    const r = await call('POST', '/v1/ingest/url', live({ url: `${fixtures.origin}/page.html` }));
    expect(r.status).toBe(202);
    expect(r.body).toMatchObject({ schemaVersion: 'service-ingest-job-v1', mode: 'queued', created: true, job: { kind: 'url', status: 'queued' } });
    expect(r.headers.get('x-service-quota-metric')).toBe('ingest');
    for (const h of ['daily-limit', 'daily-remaining', 'monthly-limit', 'monthly-remaining']) {
      expect(r.headers.get(`x-service-quota-${h}`)).toMatch(/^\d+$/);
    }
    const job = await waitJob(r.body.job.id);
    expect(job).toMatchObject({ status: 'succeeded', failure: null, attempts: 1 });
    expect(job.completedAt).toEqual(expect.any(String));

    const [source] = await sql<{ text: string; status: string }>('select text, status from source where id = ?', [job.id]);
    expect(source!.status).toBe('active');
    expect(source!.text).not.toContain('var secret');
    const records = await sql<{ kind: string; text: string; start_offset: number; end_offset: number }>(
      'select kind, text, start_offset, end_offset from record where source_id = ?', [job.id]);
    expect(records.length).toBeGreaterThan(0);
    for (const rec of records) expect(source!.text.slice(rec.start_offset, rec.end_offset)).toBe(rec.text);
    expect(records.some((x) => x.kind === 'fact' && x.text === fact)).toBe(true);
    expect(records.some((x) => x.kind === 'excerpt')).toBe(true);
  });

  it('a reused idempotencyKey returns the same job (200, created false) and spends no quota; other inputs are 409', async () => {
    const body = live({ url: `${fixtures.origin}/facts.md` });
    const first = await call('POST', '/v1/ingest/url', body);
    const remaining = Number(first.headers.get('x-service-quota-daily-remaining'));
    const again = await call('POST', '/v1/ingest/url', body);
    expect(again.status).toBe(200);
    expect(again.body).toMatchObject({ created: false, job: { id: first.body.job.id } });
    expect(Number(again.headers.get('x-service-quota-daily-remaining'))).toBe(remaining);
    const conflict = await call('POST', '/v1/ingest/url', { ...body, url: `${fixtures.origin}/facts.json` });
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('idempotency_conflict');
    await waitJob(first.body.job.id);
  });

  it('100 concurrent identical submissions with one key make one job, spend one quota unit and no credits', async () => {
    const body = live({ url: `${fixtures.origin}/facts.json` });
    const spent = async () => (await sql<{ quota: number; ledger: number; reservations: number }>(
      `select (select coalesce(sum(used), 0)::int from quota_usage where account_id = ? and metric = 'ingest' and period = 'day') as quota,
              (select count(*)::int from credit_ledger where account_id = ?) as ledger,
              (select count(*)::int from credit_reservation where account_id = ?) as reservations`,
      [accountId, accountId, accountId]))[0]!;
    const before = await spent();
    const results = await Promise.all(Array.from({ length: 100 }, () => call('POST', '/v1/ingest/url', body)));
    // Spec 4.3: one 202 (created), and every other answer is the existing job: 200, created false.
    expect(results.map((r) => `${r.status} ${r.body.created}`).sort()).toEqual(['202 true', ...Array.from({ length: 99 }, () => '200 false')].sort());
    const ids = new Set(results.map((r) => r.body.job.id));
    expect(ids.size).toBe(1);
    const [jobId] = ids;
    expect(await sql('select id from ingest_job where account_id = ? and idempotency_key = ?', [accountId, body.idempotencyKey])).toEqual([{ id: jobId }]);
    expect(await spent()).toEqual({ ...before, quota: before.quota + 1 });
    expect((await waitJob(jobId!)).status).toBe('succeeded');
  });

  it.each([
    ['notes.md', 'text/markdown', `# Notes\n\n${fact}\n`],
    ['notes.txt', 'text/plain', `${fact}\n\nSecond paragraph.`],
    ['notes.html', 'text/html', page],
    ['notes.json', 'application/json', JSON.stringify({ project: 'KestrelQ7', facts: [fact] })],
  ])('a live file %s succeeds', async (name, type, content) => {
    const r = await call('POST', '/v1/ingest/file', file(name, type, content, live({})));
    expect(r.status).toBe(202);
    expect((await waitJob(r.body.job.id)).status).toBe('succeeded');
  });

  it('a multi-page PDF succeeds and an encrypted PDF fails with a public, non-retryable failure', async () => {
    const pdf = await readFile('test/fixtures/ingest/multipage.pdf');
    const ok = await call('POST', '/v1/ingest/file', file('multi.pdf', 'application/pdf', pdf, live({})));
    expect(ok.status).toBe(202);
    expect((await waitJob(ok.body.job.id)).status).toBe('succeeded');
    const pages = await sql<{ page: number }>('select distinct page from record where source_id = ? and page is not null', [ok.body.job.id]);
    expect(pages.length).toBeGreaterThan(1);

    const enc = await readFile('test/fixtures/ingest/encrypted.pdf');
    const bad = await call('POST', '/v1/ingest/file', file('enc.pdf', 'application/pdf', enc, live({})));
    expect(bad.status).toBe(202);
    const failed = await waitJob(bad.body.job.id);
    expect(failed.status).toBe('failed');
    expect(failed.failure).toMatchObject({ message: expect.stringMatching(/encrypt|password/i), retryable: false });
    expect(await sql('select id from record where source_id = ?', [bad.body.job.id])).toEqual([]);
  });

  it('a live file whose bytes do not match its type is 400 invalid_ingest_request at submission: no job, no unit spent', async () => {
    const quota = async () => (await sql<{ n: number }>(
      `select coalesce(sum(used), 0)::int as n from quota_usage where account_id = ? and metric = 'ingest' and period = 'day'`, [accountId]))[0]!.n;
    const before = await quota();
    for (const [name, type, bytes] of [
      ['fake.pdf', 'application/pdf', Buffer.from('not a pdf at all')],
      ['broken.json', 'application/json', Buffer.from('{"a": ')],
      ['binary.md', 'text/markdown', Buffer.from([0x00, 0x01, 0x02, 0xff, 0xfe])],
      ['pdf.txt', 'text/plain', Buffer.from('%PDF-1.7\n1 0 obj\n')],
    ] as const) {
      const key = `k-${randomUUID()}`;
      const r = await call('POST', '/v1/ingest/file', file(name, type, bytes, { dryRun: false, datedAt: today, idempotencyKey: key }));
      expect([r.status, r.body.error?.code], name).toEqual([400, 'invalid_ingest_request']);
      expect(await sql('select id from ingest_job where idempotency_key = ?', [key])).toEqual([]);
    }
    expect(await quota()).toBe(before);
  });

  it('a job runs one build activity and records no marker, only its final status', async () => {
    const r = await call('POST', '/v1/ingest/file', file('plain.txt', 'text/plain', fact, live({})));
    expect((await waitJob(r.body.job.id)).status).toBe('succeeded');
    const kinds = async (workflowId: string) => {
      // The job ends in the build step; the workflow's last task (its final status) may come just after.
      await temporal.client.workflow.getHandle(workflowId).result();
      const { events } = await temporal.client.workflow.getHandle(workflowId).fetchHistory();
      return {
        activities: events!.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []),
        markers: events!.filter((e) => e.markerRecordedEventAttributes || e.upsertWorkflowSearchAttributesEventAttributes).length,
      };
    };
    // The one upsert is the job's final status and content type (CairnStatus, CairnContentType), in the last workflow task.
    expect(await kinds(ingestWorkflowId(r.body.job.id))).toEqual({ activities: ['buildIngestRecords'], markers: 1 });
    const described = await temporal.client.workflow.getHandle(ingestWorkflowId(r.body.job.id)).describe();
    expect(described.typedSearchAttributes.get(CAIRN_STATUS)).toBe('succeeded');
    expect(described.typedSearchAttributes.get(CAIRN_CONTENT_TYPE)).toBe('text/plain');
    expect(described.typedSearchAttributes.get(CAIRN_ACCOUNT)).toBe(accountId);
    expect(described.taskQueue).toBe(`${taskQueue}-ingest`);
  });

  it('stored excerpts add their words to the account lexicon, where a misspelt name finds its excerpt', async () => {
    const r = await call('POST', '/v1/ingest/file', file('heron.md', 'text/markdown', '# Heron\n\nThe lighthouse of Quillmarsh7 stands on a basalt cape, 4711 steps high.\n', live({})));
    expect((await waitJob(r.body.job.id)).status).toBe('succeeded');
    const words = await sql<{ word: string }>('select word from record_lexicon where account_id = ? order by word', [accountId]);
    expect(words.map((w) => w.word)).toEqual(expect.arrayContaining(['basalt', 'lighthouse', 'quillmarsh7']));
    expect(words.map((w) => w.word)).not.toContain('of'); // shorter than any name looked up
    expect(words.map((w) => w.word)).not.toContain('4711'); // no letter: numbers are found exactly, never spelt near

    const ask = async (bearer: string) => (await call('POST', '/v1/query',
      { mode: 'evidence', preset: 'accuracy', query: 'Where is Quilmarsh7?', idempotencyKey: `q-${randomUUID()}` }, bearer)).body;
    expect(JSON.stringify((await ask(key)).evidence)).toContain('Quillmarsh7 stands on a basalt cape');
    expect(JSON.stringify((await ask(otherKey)).evidence)).not.toContain('Quillmarsh7');
    // The near spelling comes from the lexicon: without the word there, nothing is found.
    await sql('delete from record_lexicon where account_id = ? and word = ?', [accountId, 'quillmarsh7']);
    expect(JSON.stringify((await ask(key)).evidence)).not.toContain('Quillmarsh7');
  });

  it('live submission without datedAt is 400 invalid_ingest_request and creates nothing', async () => {
    const r = await call('POST', '/v1/ingest/url', { url: `${fixtures.origin}/page.html`, dryRun: false, idempotencyKey: 'abcdefgh-1' });
    expect(r.status).toBe(400);
    expect(r.body.error.code).toBe('invalid_ingest_request');
    expect(await sql('select id from ingest_job where idempotency_key = ?', ['abcdefgh-1'])).toEqual([]);
  });
});

describe('URL safety', () => {
  it.each([
    'http://localhost:22/', 'http://10.0.0.1/', 'http://169.254.169.254/latest/meta-data/', 'http://[::1]/',
    'http://192.168.1.1/', 'http://0.0.0.0/', 'http://[fd00::1]/', 'http://2130706433/', 'ftp://example.com/x',
    'file:///etc/passwd',
  ])('refuses %s with 400 and no job', async (url) => {
    const r = await call('POST', '/v1/ingest/url', live({ url }));
    expect(r.status).toBe(400);
    expect(['invalid_ingest_request', 'validation_error']).toContain(r.body.error.code);
  });

  it('refuses a non-allowlisted local server and never contacts it', async () => {
    const r = await call('POST', '/v1/ingest/url', live({ url: `${canary.origin}/hit` }));
    expect(r.status).toBe(400);
    expect(canary.hits).toEqual([]);
  });

  it('never follows a redirect from the allowlisted origin to a loopback address', async () => {
    const dry = await call('POST', '/v1/ingest/url', { url: `${fixtures.origin}/redirect` });
    expect(dry.status).toBeGreaterThanOrEqual(400);
    const r = await call('POST', '/v1/ingest/url', live({ url: `${fixtures.origin}/redirect` }));
    if (r.status === 202) expect((await waitJob(r.body.job.id)).status).toBe('failed');
    expect(canary.hits).toEqual([]);
  });
});

describe('jobs, sources and isolation', () => {
  it('another account sees none of these jobs and cannot delete the sources', async () => {
    const r = await call('POST', '/v1/ingest/url', live({ url: `${fixtures.origin}/page.html` }));
    const job = await waitJob(r.body.job.id);
    expect((await call('GET', `/v1/ingest/jobs/${job.id}`, undefined, otherKey)).status).toBe(404);
    const list = await call('GET', '/v1/ingest/jobs?limit=100', undefined, otherKey);
    expect(list.body.jobs.map((j: Json) => j.id)).not.toContain(job.id);
    expect((await call('DELETE', `/v1/sources/${job.id}`, undefined, otherKey)).status).toBe(404);
  });

  it('deleting a source runs a source_deletion job after which none of its records remain', async () => {
    const r = await call('POST', '/v1/ingest/url', live({ url: `${fixtures.origin}/page.html` }));
    const job = await waitJob(r.body.job.id);
    expect((await sql('select id from record where source_id = ?', [job.id])).length).toBeGreaterThan(0);
    const del = await call('DELETE', `/v1/sources/${job.id}`);
    expect(del.status).toBe(202);
    expect(del.body).toMatchObject({ schemaVersion: 'service-ingest-job-v1', job: { kind: 'source_deletion' } });
    expect((await waitJob(del.body.job.id)).status).toBe('succeeded');
    expect(await sql('select id from record where source_id = ?', [job.id])).toEqual([]);
    expect(await sql('select status from source where id = ?', [job.id])).toEqual([{ status: 'deleted' }]);
    const again = await call('DELETE', `/v1/sources/${job.id}`);
    expect(again).toMatchObject({ status: 200, body: { created: false, job: { id: del.body.job.id } } });
  });

  it('a key without the ingest scope is 403 on every ingest route', async () => {
    const { secret } = await newKey(['query']);
    for (const [m, p, b] of [
      ['POST', '/v1/ingest/url', { url: `${fixtures.origin}/page.html` }],
      ['POST', '/v1/ingest/file', file('a.txt', 'text/plain', 'hello there')],
      ['GET', '/v1/ingest/jobs', undefined],
    ] as const) {
      expect((await call(m, p, b, secret)).status).toBe(403);
    }
  });
});
