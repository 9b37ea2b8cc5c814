import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';

export const API_DOCUMENT_VERSION = '0.1.5';

const pascal = (word: string) => word.split(/[-_.]/).map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join('');

/**
 * A stable operationId for generated clients: the method and the path's fixed segments, with `One`
 * when the path ends in a parameter (GET /v1/sources -> getSources, GET /v1/sources/{sourceId} ->
 * getSourcesOne, POST /v1/workspaces/{workspaceId}/peers -> postWorkspacesPeers).
 */
export function operationIdOf(method: string, url: string): string {
  const segments = url.split('/').filter((s) => s && s !== 'v1');
  const fixed = segments.filter((s) => !s.startsWith(':') && !s.startsWith('{')).map(pascal).join('');
  const last = segments.at(-1) ?? '';
  return `${method.toLowerCase()}${fixed}${last.startsWith(':') || last.startsWith('{') ? 'One' : ''}`;
}

type JsonSchema = { default?: unknown; description?: string; properties?: Record<string, JsonSchema>; items?: JsonSchema };

/** Moves a request property's `default` into its description, in place, through nested objects and arrays. */
function defaultsAsText(schema: JsonSchema | undefined): void {
  if (!schema || typeof schema !== 'object') return;
  for (const prop of Object.values(schema.properties ?? {})) {
    if ('default' in prop) {
      const said = `Default: ${JSON.stringify(prop.default)}.`;
      prop.description = prop.description ? `${prop.description} ${said}` : said;
      delete prop.default;
    }
    defaultsAsText(prop);
  }
  defaultsAsText(schema.items);
}

/**
 * Request bodies say their defaults in words, not with `default`: client generators (openapi-typescript
 * with its default options, among others) type a property with a default as required, so a client would
 * have to send what the server already assumes. Response schemas keep theirs.
 */
function withoutRequestDefaults<D>(doc: D): D {
  const d = doc as { components?: { schemas?: Record<string, JsonSchema> }; paths?: Record<string, Record<string, { requestBody?: { content?: Record<string, { schema?: JsonSchema }> } }>> };
  for (const [name, schema] of Object.entries(d.components?.schemas ?? {})) if (name.endsWith('Input')) defaultsAsText(schema);
  for (const item of Object.values(d.paths ?? {})) {
    for (const op of Object.values(item)) for (const media of Object.values(op.requestBody?.content ?? {})) defaultsAsText(media.schema);
  }
  return doc;
}

/**
 * OpenAPI 3.1 generated from the same zod schemas the routes validate with; served at /openapi.json
 * with a self-hosted docs UI at /docs (no third-party requests).
 */
export const openapiPlugin = fp(async (app: FastifyInstance, opts: { publicBaseUrl: string }) => {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Cairn API',
        version: API_DOCUMENT_VERSION,
        description:
          'Knowledge ingest, query and native memory service. Errors use the envelope ' +
          '`{ "error": { "code", "message", "requestId" } }`.',
      },
      servers: [{ url: opts.publicBaseUrl }],
      components: {
        securitySchemes: {
          apiKey: { type: 'http', scheme: 'bearer', description: 'Customer API key' },
          cliSession: { type: 'http', scheme: 'bearer', description: 'CLI session token' },
          browserSession: { type: 'apiKey', in: 'cookie', name: 'service_session' },
        },
      },
    },
    transform: (args) => {
      const out = jsonSchemaTransform(args);
      const schema = out.schema as { operationId?: string };
      return { ...out, schema: { ...schema, operationId: schema.operationId ?? operationIdOf(String(args.route.method), args.url) } };
    },
    transformObject: (documentObject) => withoutRequestDefaults(jsonSchemaTransformObject(documentObject)),
  });
  await app.register(swaggerUi, { routePrefix: '/docs', staticCSP: true });
  app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
});
