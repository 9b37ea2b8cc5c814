import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile, stat, writeFile, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiClient, createTestAccount, eventually, signIn, sqlClient, type Json, type Sql, type TestAccount } from '../helpers/accounts.ts';
import { cairnHome, finished, runCairn, spawnCairn, stderrMatch, type CairnHome } from '../helpers/cairn.ts';
import { createTestDatabase, type TestDatabase } from '../helpers/db.ts';
import { startFixtureServer } from '../helpers/fixture-server.ts';
import { startApi, startWorker, testTemporalClient, uniqueTaskQueue } from '../helpers/services.ts';

// The `cairn` CLI as a real child process against the real API (over HTTP) and a real worker on
// PostgreSQL and Temporal. Sign-in approvals are made with a browser session through the API, as the
// console page does.

const fact = 'The lighthouse keeper of Skerrow Point logs 47 storms a year.';
const page = `<!doctype html><html><head><title>Skerrow Point notes</title></head><body><h1>Skerrow Point</h1><p>${fact}</p></body></html>`;

let db: TestDatabase;
let sql: Sql;
const temporal = testTemporalClient();
const taskQueue = uniqueTaskQueue();
let api: Awaited<ReturnType<typeof startApi>>;
let worker: Awaited<ReturnType<typeof startWorker>>;
let fixtures: Awaited<ReturnType<typeof startFixtureServer>>;
let client: ApiClient;
let account: TestAccount;
let cookie: string;
const homes: CairnHome[] = [];

beforeAll(async () => {
  db = await createTestDatabase();
  sql = sqlClient(db.url);
  fixtures = await startFixtureServer({
    '/page.html': { type: 'text/html; charset=utf-8', body: page },
    '/picture.png': { type: 'image/png', body: Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]) },
  });
  api = await startApi({
    orm: db.orm,
    temporal,
    taskQueue,
    env: { INGEST_URL_ALLOWLIST: fixtures.origin, DEVICE_POLL_INTERVAL_SECONDS: '1' },
  });
  worker = await startWorker({ orm: db.orm, taskQueue, urlAllowlist: [fixtures.origin] });
  client = new ApiClient(api.baseUrl);
  account = await createTestAccount(db.orm, { ingestDailyLimit: 500 });
  cookie = await signIn(client, account);
});

afterAll(async () => {
  await Promise.all(homes.map((h) => h.remove()));
  await worker?.stop();
  await api?.close();
  await fixtures?.close();
  await temporal.close();
  await sql?.close();
  await db?.drop();
});

async function home(): Promise<CairnHome> {
  const h = await cairnHome();
  homes.push(h);
  return h;
}

/** `cairn ...` in a home, against the test API unless the variables say otherwise. */
const cairn = (h: CairnHome, args: string[], env: Record<string, string> = {}) =>
  runCairn(args, { ...h.env, CAIRN_BASE_URL: api.baseUrl, ...env });

const readConfig = async (h: CairnHome): Promise<Json> => JSON.parse(await readFile(h.configFile, 'utf8'));

/** Starts `cairn login`, reads the code it prints, approves it with the browser session, waits for the end. */
async function login(h: CairnHome, args: string[] = [], opts: { approve?: (userCode: string, child: ReturnType<typeof spawnCairn>) => Promise<void> } = {}) {
  const child = spawnCairn(['login', ...args], { ...h.env, CAIRN_BASE_URL: api.baseUrl });
  child.stdin!.end();
  const [, userCode] = await stderrMatch(child, /confirm the code: ([A-Z0-9]{4}-[A-Z0-9]{4})/);
  const approve = opts.approve ?? (async (code: string) => {
    const res = await client.post('/v1/auth/cli/device/approve', { as: { cookie }, body: { userCode: code } });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
  });
  await approve(userCode!, child);
  return { userCode: userCode!, ...(await finished(child)) };
}

/** A home signed in through the CLI. */
async function signedInHome(): Promise<CairnHome> {
  const h = await home();
  expect((await login(h)).code).toBe(0);
  return h;
}

async function createdKey(h: CairnHome, scopes = ['ingest', 'query'], extra: string[] = []): Promise<Json> {
  const r = await cairn(h, ['keys', 'create', '--name', `k-${randomUUID().slice(0, 8)}`, ...scopes.flatMap((s) => ['--scope', s]), '--json', ...extra]);
  expect(r.code, r.stderr).toBe(0);
  return r.json;
}

describe('cairn login, whoami, logout', () => {
  it('signs in with the device flow, stores the token 0600 in a 0700 dir, and never prints it', async () => {
    const h = await home();
    const r = await login(h);
    expect(r.code, r.stderr).toBe(0);
    // The console page of the service's public address (PUBLIC_BASE_URL), with the code prefilled.
    expect(r.stderr).toMatch(new RegExp(`open https?://\\S+/device\\?code=${r.userCode}\n`));
    expect(r.stdout).toContain(`Signed in to ${api.baseUrl} as ${account.email}`);
    const config = await readConfig(h);
    const session = config.sessions[api.baseUrl];
    expect(session).toMatchObject({ email: account.email, token: expect.stringMatching(/^cairn_cli_/) });
    expect(config.baseUrl).toBe(api.baseUrl);
    expect(r.stdout + r.stderr).not.toContain(session.token);
    expect((await stat(h.configFile)).mode & 0o777).toBe(0o600);
    expect((await stat(path.dirname(h.configFile))).mode & 0o777).toBe(0o700);
    // The stored token is a working CLI session on the service.
    const status = await client.get('/v1/auth/cli/session', { as: { bearer: session.token } });
    expect(status.body).toMatchObject({ signedIn: true, account: { email: account.email } });
    // The service recorded the client name the CLI sent.
    const [row] = await sql.query('select client_name from cli_session where token_hash = encode(sha256($1::bytea), \'hex\')', [session.token]);
    expect(row.client_name).toMatch(/^cairn CLI on /);
  });

  it('login --json prints one document without the token; whoami shows the account', async () => {
    const h = await home();
    const r = await login(h, ['--json']);
    expect(r.code).toBe(0);
    expect(r.json).toMatchObject({ signedIn: true, baseUrl: api.baseUrl, account: { email: account.email }, configFile: h.configFile });
    expect(r.stdout).not.toContain('cairn_cli_');

    const who = await cairn(h, ['whoami']);
    expect(who.code, who.stderr).toBe(0);
    expect(who.stdout).toMatch(new RegExp(`signed in:\\s+${account.email.replace('.', '\\.')}`));
    expect(who.stdout).toContain('API key:   none configured');
    const whoJson = await cairn(h, ['whoami', '--json']);
    expect(whoJson.json).toMatchObject({ baseUrl: api.baseUrl, session: { schemaVersion: 'service-cli-auth-v1', signedIn: true, account: { email: account.email } }, apiKey: null });

    // Signing in again replaces the stored session and ends the previous one on the service.
    const first = (await readConfig(h)).sessions[api.baseUrl].token;
    expect((await login(h)).code).toBe(0);
    const second = (await readConfig(h)).sessions[api.baseUrl].token;
    expect(second).not.toBe(first);
    expect((await client.get('/v1/auth/cli/session', { as: { bearer: first } })).status).toBe(401);
    expect((await client.get('/v1/auth/cli/session', { as: { bearer: second } })).status).toBe(200);
  });

  it('honours slow_down: polls less often, then completes', async () => {
    const h = await home();
    const r = await login(h, [], {
      async approve(userCode, child) {
        // Once the CLI has polled (and been told 1 s), the service starts asking for 10 s between polls:
        // the CLI's next poll, about 1 s later, is too soon and is told to slow down.
        await eventually(async () => (await sql.query('select 1 from cli_device_authorization where user_code = $1 and last_polled_at is not null', [userCode])).length, 'the first poll', 20_000);
        await sql.query('update cli_device_authorization set interval_seconds = 10 where user_code = $1', [userCode]);
        await stderrMatch(child, /slower polling; checking every (\d+)s/);
        const res = await client.post('/v1/auth/cli/device/approve', { as: { cookie }, body: { userCode } });
        expect(res.status).toBe(200);
      },
    });
    expect(r.code, r.stderr).toBe(0);
    // RFC 8628 adds 5 s (1 + 5); the service's retry-after (10 s) is longer, so that is used.
    expect(r.stderr).toContain('checking every 10s');
    expect((await readConfig(h)).sessions[api.baseUrl].email).toBe(account.email);
  });

  it('an expired code ends the login with device_code_expired (exit 1) and stores nothing', async () => {
    const h = await home();
    const r = await login(h, [], {
      async approve(userCode) {
        await sql.query(`update cli_device_authorization set expires_at = now() - interval '1 second' where user_code = $1`, [userCode]);
      },
    });
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cairn: device_code_expired: .*\(HTTP 400, request /);
    await expect(stat(h.configFile)).rejects.toThrow(/ENOENT/);
  });

  it('logout ends the session on the service and removes the token; API keys stay valid', async () => {
    const h = await signedInHome();
    const key = await createdKey(h);
    const token = (await readConfig(h)).sessions[api.baseUrl].token;
    const out = await cairn(h, ['logout']);
    expect(out.code, out.stderr).toBe(0);
    expect(out.stdout).toContain(`Signed out of ${api.baseUrl}`);
    expect((await readConfig(h)).sessions[api.baseUrl]).toBeUndefined();
    expect((await stat(h.configFile)).mode & 0o777).toBe(0o600);
    expect((await client.get('/v1/auth/cli/session', { as: { bearer: token } })).status).toBe(401);
    expect((await client.get('/v1/access', { as: { bearer: key.secret } })).status).toBe(200);

    const again = await cairn(h, ['logout', '--json']);
    expect(again.code).toBe(0);
    expect(again.json).toMatchObject({ signedOut: true, serverSession: 'none' });
    const who = await cairn(h, ['whoami']);
    expect(who.code).toBe(64);
    expect(who.stderr).toContain(`cairn: usage_error: not signed in to ${api.baseUrl}: run \`cairn login --base-url ${api.baseUrl}\``);
  });

  it('a session ended elsewhere: account commands exit 77 with unauthorized; logout still cleans up', async () => {
    const h = await signedInHome();
    const token = (await readConfig(h)).sessions[api.baseUrl].token;
    expect((await client.delete('/v1/auth/cli/session', { as: { bearer: token } })).status).toBe(200);
    const list = await cairn(h, ['keys', 'list', '--json']);
    expect(list.code).toBe(77);
    expect(list.stderr).toMatch(/^cairn: unauthorized: .*\(HTTP 401, request \S+\)\n$/);
    expect(list.json).toEqual({ error: { code: 'unauthorized', message: expect.any(String), requestId: expect.any(String), status: 401 } });
    const out = await cairn(h, ['logout', '--json']);
    expect(out.code).toBe(0);
    expect(out.json.serverSession).toBe('already_ended');
    expect((await readConfig(h)).sessions[api.baseUrl]).toBeUndefined();
  });
});

describe('cairn keys and usage', () => {
  let h: CairnHome;
  beforeAll(async () => {
    h = await signedInHome();
  });

  it('keys create shows the secret once; list never does; rotate replaces; revoke ends it', async () => {
    const created = await cairn(h, ['keys', 'create', '--name', 'laptop', '--scope', 'ingest', '--scope', 'memory.read', '--max-preset', 'efficient']);
    expect(created.code, created.stderr).toBe(0);
    const secret = created.stdout.match(/Secret \(shown only now; store it safely\):\n {2}(cairn_sk_\S+)/)![1]!;
    expect(created.stdout).toContain('Secret (shown only now');
    expect(created.stdout).toMatch(/scopes:\s+ingest,memory\.read/);
    const access = await client.get('/v1/access', { as: { bearer: secret } });
    expect(access.body.key).toMatchObject({ name: 'laptop', scopes: ['ingest', 'memory.read'], maxPreset: 'efficient' });
    const id = access.body.key.id as string;

    const list = await cairn(h, ['keys', 'list']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+NAME\s+PREFIX\s+SCOPES\s+PRESET\s+STATUS\s+LAST USED/);
    expect(list.stdout).toContain(id);
    expect(list.stdout).not.toContain(secret);
    const listJson = await cairn(h, ['keys', 'list', '--json']);
    expect(listJson.json.schemaVersion).toBe('service-api-key-list-v1');
    expect(listJson.json.apiKeys.find((k: Json) => k.id === id)).toMatchObject({ name: 'laptop', status: 'active', lastUsedAt: expect.any(String) });
    expect(listJson.stdout).not.toContain(secret);

    const rotated = await cairn(h, ['keys', 'rotate', id, '--name', 'laptop-2', '--json']);
    expect(rotated.code, rotated.stderr).toBe(0);
    expect(rotated.json).toMatchObject({ schemaVersion: 'service-api-key-v1', apiKey: { name: 'laptop-2', scopes: ['ingest', 'memory.read'] }, secret: expect.stringMatching(/^cairn_sk_/) });
    expect((await client.get('/v1/access', { as: { bearer: secret } })).status).toBe(401);
    expect((await client.get('/v1/access', { as: { bearer: rotated.json.secret } })).status).toBe(200);

    const revoked = await cairn(h, ['keys', 'revoke', rotated.json.apiKey.id]);
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(revoked.stdout).toMatch(/status:\s+revoked/);
    expect((await client.get('/v1/access', { as: { bearer: rotated.json.secret } })).status).toBe(401);
  });

  it('keys errors carry the service code: a bad scope is a usage error, an unknown id not_found', async () => {
    const bad = await cairn(h, ['keys', 'create', '--name', 'x', '--scope', 'admin']);
    expect(bad.code).toBe(64);
    expect(bad.stderr).toContain('--scope');
    const missing = await cairn(h, ['keys', 'revoke', randomUUID(), '--json']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^cairn: not_found: /);
    expect(missing.json.error.code).toBe('not_found');
    const malformed = await cairn(h, ['keys', 'revoke', 'not-a-uuid']);
    expect(malformed.code).toBe(1);
    expect(malformed.stderr).toMatch(/^cairn: validation_error: /);
    expect((await cairn(h, ['keys', 'revoke'])).code).toBe(64);
  });

  it('account commands never use an API key: with only a key configured they ask for login', async () => {
    const key = await createdKey(h);
    const other = await home();
    const r = await cairn(other, ['keys', 'list'], { CAIRN_API_KEY: key.secret });
    expect(r.code).toBe(64);
    expect(r.stderr).toContain('not signed in');
    // whoami shows what the key is when there is no session.
    const who = await cairn(other, ['whoami', '--json'], { CAIRN_API_KEY: key.secret });
    expect(who.code, who.stderr).toBe(0);
    expect(who.json).toMatchObject({ session: null, apiKey: { key: { id: key.apiKey.id }, source: 'CAIRN_API_KEY' } });
  });

  it('usage shows credits, quotas, the 30 days and ledger rows', async () => {
    const r = await cairn(h, ['usage']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^Credits: \d+ remaining/);
    expect(r.stdout).toMatch(/query\s+\d+\/\d+ used/);
    expect(r.stdout).toMatch(/ingest\s+\d+\/\d+ used/);
    expect(r.stdout).toMatch(/queries {2}\|.{30}\| \d+/);
    const j = await cairn(h, ['usage', '--json', '--ledger-limit', '3']);
    expect(j.json.schemaVersion).toBe('service-account-usage-v1');
    expect(j.json.daily).toHaveLength(30);
    expect(j.json.ledger.length).toBeLessThanOrEqual(3);
    expect((await cairn(h, ['usage', '--ledger-limit', '0'])).code).toBe(64);
  });

  it('usage shows spending as negative, one line per query, grants with a plus', async () => {
    const k = await createdKey(await signedInHome(), ['query']);
    const before = await cairn(h, ['usage', '--json', '--ledger-limit', '100']);
    const q = await cairn(h, ['query', 'anything at all', '--json'], { CAIRN_API_KEY: k.secret });
    expect(q.code, q.stderr).toBe(0);
    const after = await cairn(h, ['usage', '--json', '--ledger-limit', '100']);
    expect(after.json.ledger.length).toBe(before.json.ledger.length + 1);
    expect(after.json.ledger[0]).toMatchObject({ kind: 'charge', amount: -1, metric: 'query' });
    const text = (await cairn(h, ['usage', '--ledger-limit', '100'])).stdout;
    expect(text).toMatch(/ charge\s+-1\s+query/);
    expect(text).toMatch(/ grant_monthly\s+\+\d+/);
    expect(text).not.toMatch(/ (reserve|charge)\s+\+1/);
  });
});

describe('cairn ingest, jobs and sources', () => {
  let h: CairnHome;
  let key: string;
  beforeAll(async () => {
    h = await signedInHome();
    key = (await createdKey(h, ['ingest'], ['--save'])).secret;
    expect((await readConfig(h)).apiKey).toBe(key);
  });

  it('ingest url is a dry run by default: the plan is shown and nothing is stored', async () => {
    const before = await sql.count('select 1 from ingest_job');
    const r = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`Dry run for ${fixtures.origin}/page.html (nothing was stored)`);
    expect(r.stdout).toMatch(/title: Skerrow Point notes/);
    expect(r.stdout).toContain('add --live');
    const j = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--json']);
    expect(j.json).toMatchObject({ schemaVersion: 'service-url-ingest-plan-v1', mode: 'dry-run', plan: { summary: expect.any(String) } });
    expect(await sql.count('select 1 from ingest_job')).toBe(before);
    const wrong = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--wait']);
    expect(wrong.code).toBe(64);
  });

  it('ingest url --live --wait follows the job to succeeded; the same idempotency key returns it again', async () => {
    const idem = `cli-test-${randomUUID()}`;
    const r = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--live', '--wait', '--idempotency-key', idem, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json).toMatchObject({ schemaVersion: 'service-ingest-job-v1', mode: 'queued', created: true, job: { kind: 'url', status: 'succeeded' } });
    const today = new Date();
    const day = `${today.getFullYear()}-${String(today.getMonth() + 1).padStart(2, '0')}-${String(today.getDate()).padStart(2, '0')}`;
    expect(r.json.request).toEqual({ dryRun: false, datedAt: day, idempotencyKey: idem });
    expect(r.stderr).toMatch(new RegExp(`job ${r.json.job.id}: succeeded`));
    expect(await sql.count('select 1 from record where source_id = $1', [r.json.job.id])).toBeGreaterThan(0);

    const again = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--live', '--idempotency-key', idem]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toContain('This idempotency key already had a job');
    expect(again.stdout).toContain(r.json.job.id);

    const conflict = await cairn(h, ['ingest', 'url', `${fixtures.origin}/other.html`, '--live', '--idempotency-key', idem]);
    expect(conflict.code).toBe(1);
    expect(conflict.stderr).toMatch(/^cairn: idempotency_conflict: /);
  });

  it('a generated idempotency key and a given --dated-at; without --wait the job is shown queued', async () => {
    const r = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--live', '--dated-at', '2024-02-29', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.request).toEqual({ dryRun: false, datedAt: '2024-02-29', idempotencyKey: expect.stringMatching(/^cairn-cli-[0-9a-f-]{36}$/) });
    expect(r.stderr).toContain(`idempotency key ${r.json.request.idempotencyKey}`);
    const [row] = await sql.query('select dated_at::text as d from ingest_job where id = $1', [r.json.job.id]);
    expect(row.d).toBe('2024-02-29');
    const shown = await cairn(h, ['jobs', 'show', r.json.job.id, '--wait']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/status:\s+succeeded/);
    expect((await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--live', '--dated-at', '2024-02-30'])).code).toBe(64);
  });

  it('ingest file: dry run shows the plan, --live --wait queues and completes it', async () => {
    const file = path.join(h.dir, 'notes.md');
    await writeFile(file, `# Skerrow Point\n\n${fact}\n`);
    const dry = await cairn(h, ['ingest', 'file', file]);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain(`Dry run for ${file} (text/markdown`);
    const live = await cairn(h, ['ingest', 'file', file, '--live', '--wait', '--json']);
    expect(live.code, live.stderr).toBe(0);
    expect(live.json.job.status).toBe('succeeded');
    const [src] = await sql.query('select filename from ingest_job where id = $1', [live.json.job.id]);
    expect(src.filename).toBe('notes.md');

    const unknown = path.join(h.dir, 'notes.xyz');
    await writeFile(unknown, 'plain words');
    const noType = await cairn(h, ['ingest', 'file', unknown]);
    expect(noType.code).toBe(64);
    expect(noType.stderr).toContain('--content-type');
    expect((await cairn(h, ['ingest', 'file', unknown, '--content-type', 'text/plain', '--json'])).json.schemaVersion).toBe('service-file-ingest-plan-v1');
    const absent = await cairn(h, ['ingest', 'file', path.join(h.dir, 'absent.md')]);
    expect(absent.code).toBe(64);
  });

  it('--wait on a job that fails exits 1 with job_failed after printing the job', async () => {
    const r = await cairn(h, ['ingest', 'url', `${fixtures.origin}/picture.png`, '--live', '--wait', '--json']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cairn: job_failed: job \S+ ended failed/);
    expect(r.json.job).toMatchObject({ status: 'failed', failure: { message: expect.any(String) } });
  });

  it('a URL preview of a page answering 404 is a refused source (exit 1), not an unreachable service (69)', async () => {
    const r = await cairn(h, ['ingest', 'url', `${fixtures.origin}/no-such-page.html`, '--json']);
    expect(r.code).toBe(1);
    expect(r.json.error).toMatchObject({ code: 'ingest_job_failed', status: 502 });
    expect(r.stderr).toMatch(/^cairn: ingest_job_failed: .*404/);
    const down = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`], { CAIRN_BASE_URL: 'http://127.0.0.1:9' });
    expect(down.code).toBe(69);
    expect(down.stderr).toMatch(/^cairn: service_unreachable: /);
  });

  it('a blocked URL is refused with the service\'s code and no job', async () => {
    const r = await cairn(h, ['ingest', 'url', 'http://10.0.0.1/', '--live', '--json']);
    expect(r.code).toBe(1);
    expect(['invalid_ingest_request', 'validation_error']).toContain(r.json.error.code);
    expect(r.stderr).toContain(`cairn: ${r.json.error.code}: `);
  });

  it('jobs lists newest first (table and --json); jobs show of an unknown id is not_found', async () => {
    const list = await cairn(h, ['jobs', '--limit', '2']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^ID\s+KIND\s+STATUS\s+SOURCE\s+CREATED\s+COMPLETED\s+FAILURE/);
    const cursor = /More: cairn jobs --cursor (\S+) \(or --all for every page\)/.exec(list.stderr)?.[1];
    expect(cursor, list.stderr).toBeDefined();
    // What each job was about: the URL or the file name.
    const j = await cairn(h, ['jobs', '--json']);
    expect(j.json).toMatchObject({ schemaVersion: 'service-ingest-job-list-v1', pagination: { hasMore: false } });
    expect(j.json.jobs.length).toBeGreaterThanOrEqual(4);
    const all = await cairn(h, ['jobs']);
    expect(all.stdout).toContain(`${fixtures.origin}/page.html`);
    expect(all.stdout).toContain('notes.md');
    expect(all.stdout).toContain(`${fixtures.origin}/picture.png`);
    // Pages: --cursor continues where --limit stopped; --all walks every page into one list.
    const next = await cairn(h, ['jobs', '--limit', '2', '--cursor', cursor!, '--json']);
    expect(next.json.jobs.map((x: Json) => x.id)).toEqual(j.json.jobs.slice(2, 4).map((x: Json) => x.id));
    const paged = await cairn(h, ['jobs', '--limit', '2', '--all', '--json']);
    expect(paged.json.jobs.map((x: Json) => x.id)).toEqual(j.json.jobs.map((x: Json) => x.id));
    expect(paged.json.pagination).toMatchObject({ hasMore: false, returned: j.json.jobs.length });
    const missing = await cairn(h, ['jobs', 'show', randomUUID()]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/^cairn: not_found: .*\(HTTP 404, request \S+\)/);
  });

  it('sources delete --wait runs the source_deletion job; the records are gone', async () => {
    const r = await cairn(h, ['ingest', 'url', `${fixtures.origin}/page.html`, '--live', '--wait', '--json']);
    const sourceId = r.json.job.id as string;
    expect(await sql.count('select 1 from record where source_id = $1', [sourceId])).toBeGreaterThan(0);
    const del = await cairn(h, ['sources', 'delete', sourceId, '--wait', '--json']);
    expect(del.code, del.stderr).toBe(0);
    expect(del.json.job).toMatchObject({ kind: 'source_deletion', status: 'succeeded' });
    expect(await sql.count('select 1 from record where source_id = $1', [sourceId])).toBe(0);
  });

  it('the CLI session token also works for ingest and jobs when no API key is configured', async () => {
    const s = await signedInHome();
    const r = await cairn(s, ['jobs', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.json.jobs.length).toBeGreaterThan(0);
  });
});

describe('settings: flags over environment over the config file', () => {
  const dead = 'http://127.0.0.1:9';
  let key: string;
  let revokedKey: string;
  beforeAll(async () => {
    const h = await signedInHome();
    key = (await createdKey(h, ['ingest'])).secret;
    const r = await createdKey(h, ['ingest']);
    revokedKey = r.secret;
    expect((await cairn(h, ['keys', 'revoke', r.apiKey.id])).code).toBe(0);
  });

  const withFile = async (config: Json) => {
    const h = await home();
    await mkdir(path.dirname(h.configFile), { recursive: true });
    await writeFile(h.configFile, JSON.stringify(config));
    return h;
  };
  const jobs = (h: CairnHome, args: string[], env: Record<string, string>) => runCairn(['jobs', '--json', ...args], { ...h.env, ...env });

  it('base URL: the config file alone; the environment over the file; the flag over both', async () => {
    const fileOnly = await withFile({ baseUrl: api.baseUrl, apiKey: key });
    expect((await jobs(fileOnly, [], {})).code).toBe(0);
    const envWins = await withFile({ baseUrl: dead, apiKey: key });
    expect((await jobs(envWins, [], {})).code).toBe(69);
    expect((await jobs(envWins, [], { CAIRN_BASE_URL: api.baseUrl })).code).toBe(0);
    const flagWins = await jobs(envWins, ['--base-url', api.baseUrl], { CAIRN_BASE_URL: dead });
    expect(flagWins.code, flagWins.stderr).toBe(0);
    const unreachable = await jobs(envWins, ['--base-url', dead], { CAIRN_BASE_URL: api.baseUrl });
    expect(unreachable.code).toBe(69);
    expect(unreachable.stderr).toContain(`cairn: service_unreachable: cannot reach the Cairn service at ${dead}`);
    expect(unreachable.json.error.code).toBe('service_unreachable');
  });

  it('API key: the config file alone; the environment over the file; the flag over both', async () => {
    const h = await withFile({ baseUrl: api.baseUrl, apiKey: revokedKey });
    const fromFile = await jobs(h, [], {});
    expect(fromFile.code).toBe(77);
    expect(fromFile.json.error.code).toBe('unauthorized');
    expect((await jobs(h, [], { CAIRN_API_KEY: key })).code).toBe(0);
    expect((await jobs(h, ['--api-key', key], { CAIRN_API_KEY: revokedKey })).code).toBe(0);
    expect((await jobs(h, ['--api-key', revokedKey], { CAIRN_API_KEY: key })).code).toBe(77);
    const malformed = await jobs(h, ['--api-key', 'sk-nope'], {});
    expect(malformed.code).toBe(64);
    expect(malformed.stderr).toContain('--api-key does not look like an API key');
  });

  it('config set/show/unset write the file (0600) and mask the key', async () => {
    const h = await home();
    expect((await cairn(h, ['config', 'set', 'base-url', `${api.baseUrl}/`], { CAIRN_BASE_URL: '' })).code).toBe(0);
    expect((await cairn(h, ['config', 'set', 'api-key', key])).code).toBe(0);
    expect((await stat(h.configFile)).mode & 0o777).toBe(0o600);
    expect(await readConfig(h)).toEqual({ baseUrl: api.baseUrl, apiKey: key });
    const shown = await runCairn(['config', 'show', '--json'], h.env);
    expect(shown.json.effective).toMatchObject({ baseUrl: api.baseUrl, apiKeySource: h.configFile, signedIn: null });
    expect(shown.stdout).not.toContain(key);
    expect((await runCairn(['jobs'], h.env)).code).toBe(0);
    expect((await cairn(h, ['config', 'unset', 'api-key'])).code).toBe(0);
    const none = await runCairn(['jobs'], h.env);
    expect(none.code).toBe(64);
    expect(none.stderr).toContain('no API key');
    expect((await cairn(h, ['config', 'set', 'colour', 'blue'])).code).toBe(64);
    expect((await cairn(h, ['config', 'set', 'base-url', 'ftp://x'])).code).toBe(64);
  });

  it('a session token is only sent to the service it came from', async () => {
    const h = await signedInHome();
    const other = await runCairn(['keys', 'list'], { ...h.env, CAIRN_BASE_URL: dead });
    expect(other.code).toBe(64);
    expect(other.stderr).toContain(`not signed in to ${dead}`);
  });
});

describe('cairn command line', () => {
  it('help, group help, per-command help; unknown commands and flags exit 64', async () => {
    const h = await home();
    const help = await cairn(h, ['help']);
    expect(help.code).toBe(0);
    for (const c of ['login', 'logout', 'whoami', 'keys list', 'keys create', 'keys rotate', 'keys revoke', 'usage', 'ingest url', 'ingest file', 'jobs', 'jobs show', 'sources delete', 'query', 'memory peers create', 'memory claims correct', 'memory events show', 'mcp']) {
      expect(help.stdout).toContain(`cairn ${c}`);
    }
    const group = await cairn(h, ['keys']);
    expect(group.code).toBe(0);
    expect(group.stdout).toContain('cairn keys rotate');
    expect(group.stdout).not.toContain('cairn login');
    const one = await cairn(h, ['ingest', 'url', '--help']);
    expect(one.code).toBe(0);
    expect(one.stdout).toContain('usage: cairn ingest url URL');
    expect((await cairn(h, ['nope'])).code).toBe(64);
    expect((await cairn(h, ['jobs', '--bogus'])).code).toBe(64);
    expect((await cairn(h, ['jobs', 'show'])).code).toBe(64);
  });

  it('runs as `npx cairn` from the checkout (npm puts the project\'s Node 24 on PATH)', async () => {
    const h = await home();
    const child = spawn('npx', ['--no', 'cairn', 'whoami', '--json'], {
      cwd: path.resolve(import.meta.dirname, '../..'),
      env: { PATH: process.env.PATH ?? '', ...h.env, CAIRN_BASE_URL: api.baseUrl },
    });
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += d));
    const code = await new Promise((resolve) => child.on('close', resolve));
    expect(code).toBe(64);
    expect(stderr).toContain(`cairn: usage_error: not signed in to ${api.baseUrl}`);
  });
});
