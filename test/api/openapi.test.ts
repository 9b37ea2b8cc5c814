import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../api/app.ts';
import { loadConfig } from '../../platform/config.ts';
import { memoryLogger, offlineDeps } from '../helpers/services.ts';

let app: FastifyInstance;
beforeAll(async () => {
  app = await buildApp({ config: loadConfig({}), logger: memoryLogger().logger, readiness: {}, ...(await offlineDeps()) });
  await app.ready();
});
afterAll(() => app.close());

describe('OpenAPI document', () => {
  it('is a valid OpenAPI 3.1 document at version 0.1.5 generated from the route schemas', async () => {
    const res = await app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    const doc = res.json();
    expect(doc.openapi).toMatch(/^3\.1\./);
    expect(doc.info.version).toBe('0.1.5');
    const result = await new Validator().validate(doc);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining(['/healthz', '/readyz']));
    // Response schemas come from zod: the readiness 503 carries the error envelope.
    const r503 = doc.paths['/readyz'].get.responses['503'];
    expect(JSON.stringify(r503)).toContain('requestId');
    expect(doc.paths['/openapi.json']).toBeUndefined();
    // Every operation has an operationId, unique, for generated clients (GET /v1/sources/{id} -> getSourcesOne).
    const ids = Object.values(doc.paths).flatMap((item) => Object.values(item as Record<string, { operationId?: string }>).map((op) => op.operationId));
    expect(ids.every((id) => typeof id === 'string' && /^[a-z][A-Za-z]+$/.test(id))).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths['/v1/ingest/jobs/{jobId}'].get.operationId).toBe('getIngestJobsOne');
    // Request bodies say their defaults in words (generated clients type a `default` as required).
    const requestSchemas = Object.entries(doc.components.schemas).filter(([name]) => name.endsWith('Input'));
    expect(requestSchemas.length).toBeGreaterThan(10);
    for (const [name, schema] of requestSchemas) expect(JSON.stringify(schema), name).not.toMatch(/"default":/);
    expect(doc.components.schemas.UrlIngestRequestInput.properties.dryRun.description).toContain('Default: true.');
    expect(doc.components.schemas.UrlIngestRequestInput.required ?? []).not.toContain('dryRun');
    // Patterns every common validator reads: no Unicode property escapes.
    expect(JSON.stringify(doc)).not.toMatch(/\\\\p\{/);
  });

  it('serves the docs UI from the service itself', async () => {
    const res = await app.inject({ method: 'GET', url: '/docs/' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toContain('text/html');
    expect(res.body).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[a-z0-9.-]+\.(com|org|net|io)\/[^"']*\.js/);
  });
});
