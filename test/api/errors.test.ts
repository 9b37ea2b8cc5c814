import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildApp } from '../../api/app.ts';
import { loadConfig } from '../../platform/config.ts';
import { AppError } from '../../platform/errors.ts';
import { memoryLogger, offlineDeps } from '../helpers/services.ts';

// Routes that exercise the error handler; the handler is the thing under test.
const probeRoutes: FastifyPluginAsyncZod = async (app) => {
  app.post(
    '/probe/closed',
    { schema: { body: z.strictObject({ name: z.string().min(1), count: z.number().int().optional() }) } },
    async (req) => ({ name: req.body.name }),
  );
  app.get('/probe/domain', async () => {
    throw new AppError(429, 'rate_limited', 'Slow down.', { 'retry-after': '7' });
  });
  app.get('/probe/crash', async () => {
    throw new Error('connection string postgres://user:hunter2@db/secret leaked?');
  });
};

let app: FastifyInstance;
let lines: string[];

beforeAll(async () => {
  const mem = memoryLogger('info');
  lines = mem.lines;
  app = await buildApp({ config: loadConfig({}), logger: mem.logger, readiness: {}, ...(await offlineDeps()) });
  await app.register(probeRoutes);
  await app.ready();
});
afterAll(() => app.close());

function expectEnvelope(body: unknown, code: string) {
  expect(body).toEqual({ error: { code, message: expect.any(String), requestId: expect.any(String) } });
}

describe('error envelope', () => {
  it('400 validation_error for an unknown field on a closed schema', async () => {
    const res = await app.inject({ method: 'POST', url: '/probe/closed', payload: { name: 'a', extra: 1 } });
    expect(res.statusCode).toBe(400);
    expectEnvelope(res.json(), 'validation_error');
  });

  it('400 validation_error for a wrong type and names the field', async () => {
    const res = await app.inject({ method: 'POST', url: '/probe/closed', payload: { name: 'a', count: 1.5 } });
    expect(res.statusCode).toBe(400);
    expectEnvelope(res.json(), 'validation_error');
    expect(res.json().error.message).toContain('count');
  });

  it('400 validation_error for malformed JSON', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/probe/closed',
      headers: { 'content-type': 'application/json' },
      payload: '{"name": ',
    });
    expect(res.statusCode).toBe(400);
    expectEnvelope(res.json(), 'validation_error');
  });

  it('400 validation_error for invalid UTF-8 inside a JSON body (it would become U+FFFD and be stored)', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/probe/closed',
      headers: { 'content-type': 'application/json' },
      payload: Buffer.concat([Buffer.from('{"name": "jos'), Buffer.from([0xc3, 0x28, 0xff]), Buffer.from('"}')]),
    });
    expect(res.statusCode).toBe(400);
    expectEnvelope(res.json(), 'validation_error');
    expect(res.json().error.message).toContain('UTF-8');
    // Valid UTF-8 (an accented letter, an emoji) passes.
    const ok = await app.inject({ method: 'POST', url: '/probe/closed', headers: { 'content-type': 'application/json' }, payload: Buffer.from('{"name": "José 🌋"}') });
    expect(ok.json()).toEqual({ name: 'José 🌋' });
  });

  it('400 validation_error for C1 controls (U+0085 NEL) and bidirectional overrides or isolates (U+202E, U+2066) in any string', async () => {
    for (const bad of ['\u0085', '\u009b', '\u202e', '\u202a', '\u2066', '\u2069']) {
      const res = await app.inject({ method: 'POST', url: '/probe/closed', payload: { name: `a${bad}b` } });
      expect(res.statusCode, JSON.stringify(bad)).toBe(400);
      expectEnvelope(res.json(), 'validation_error');
      expect(res.json().error.message).toContain('name');
    }
    // Right-to-left text with its marks (U+200F) is text, not a control.
    const rtl = await app.inject({ method: 'POST', url: '/probe/closed', payload: { name: 'שלום\u200f abc' } });
    expect(rtl.statusCode).toBe(200);
  });

  it('415 for a body that is not JSON', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/probe/closed',
      headers: { 'content-type': 'text/xml' },
      payload: '<a/>',
    });
    expect(res.statusCode).toBe(415);
    expectEnvelope(res.json(), 'unsupported_media_type');
  });

  it('413 payload_too_large past the body limit', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/probe/closed',
      payload: { name: 'x'.repeat(2_000_000) },
    });
    expect(res.statusCode).toBe(413);
    expectEnvelope(res.json(), 'payload_too_large');
  });

  it('domain errors keep their status, code and headers', async () => {
    const res = await app.inject({ method: 'GET', url: '/probe/domain' });
    expect(res.statusCode).toBe(429);
    expect(res.headers['retry-after']).toBe('7');
    expectEnvelope(res.json(), 'rate_limited');
    expect(res.json().error.message).toBe('Slow down.');
  });

  it('404 not_found for an unknown route', async () => {
    const res = await app.inject({ method: 'GET', url: '/v1/nothing-here?x=1' });
    expect(res.statusCode).toBe(404);
    expectEnvelope(res.json(), 'not_found');
  });

  it('500 never leaks the internal message', async () => {
    const res = await app.inject({ method: 'GET', url: '/probe/crash' });
    expect(res.statusCode).toBe(500);
    expectEnvelope(res.json(), 'internal_error');
    expect(res.body).not.toContain('hunter2');
    expect(lines.join('')).toContain('hunter2'); // the operator still sees it in the log
  });

  it('requestId matches the x-request-id header and honours a well-formed caller id', async () => {
    const res = await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'caller-req-12345' } });
    expect(res.headers['x-request-id']).toBe('caller-req-12345');
    expect(res.json().error.requestId).toBe('caller-req-12345');
    // Letters no generated id contains ("bad" is hexadecimal: a UUID may hold it).
    const bad = await app.inject({ method: 'GET', url: '/nope', headers: { 'x-request-id': 'zzz id\n' } });
    expect(bad.json().error.requestId).not.toContain('zzz');
    expect(bad.headers['x-request-id']).toBe(bad.json().error.requestId);
  });
});

describe('log redaction', () => {
  it('never writes authorization headers, cookies or passwords to the log', async () => {
    const mem = memoryLogger('debug');
    const a = await buildApp({ config: loadConfig({}), logger: mem.logger, readiness: {}, ...(await offlineDeps()) });
    a.addHook('onRequest', async (req) => {
      req.log.info({ req: { headers: req.headers }, password: 'pw-secret-123' }, 'probe');
    });
    await a.inject({
      method: 'GET',
      url: '/healthz',
      headers: { authorization: 'Bearer sk_live_SECRET', cookie: 'service_session=COOKIESECRET' },
    });
    await a.close();
    const out = mem.lines.join('');
    expect(out).toContain('probe');
    expect(out).not.toContain('sk_live_SECRET');
    expect(out).not.toContain('COOKIESECRET');
    expect(out).not.toContain('pw-secret-123');
  });
});
