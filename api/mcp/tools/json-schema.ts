import { z } from 'zod';

/**
 * zod's global metadata (descriptions, titles) without the `id`s that name OpenAPI components: with an
 * id, zod moves a schema to `$defs` and leaves a `$ref`, and a tool's inputSchema and outputSchema
 * must be plain objects at the root that clients without a `$ref` resolver can read whole.
 */
class InlineMetadata extends z.core.$ZodRegistry<z.core.GlobalMeta> {
  override get(schema: z.core.$ZodType): z.core.GlobalMeta | undefined {
    const meta = z.globalRegistry.get(schema);
    if (!meta) return undefined;
    const { id: _id, ...rest } = meta;
    return rest;
  }
}
const metadata = new InlineMetadata();

/** "Any JSON value", spelled with a type per branch so that the schema still says what it admits. */
const ANY_JSON = (['string', 'number', 'boolean', 'null', 'array', 'object'] as const).map((type) => ({ type }));

/** Keywords whose values are data, not schemas. */
const DATA_KEYWORDS = new Set(['const', 'enum', 'default', 'examples']);

/**
 * zod spells a nullable value `type: ["string", "null"]`; clients that map tool schemas onto a
 * single-type dialect (the OpenAPI subset of some model providers) reject or drop that, so each type
 * becomes its own `anyOf` branch (the same meaning: zod only compacts branches that are a bare type).
 */
function splitTypeArrays(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(splitTypeArrays);
  if (typeof node !== 'object' || node === null) return;
  const schema = node as Record<string, unknown>;
  if (Array.isArray(schema.type)) {
    schema.anyOf = (schema.type as string[]).map((type) => ({ type }));
    delete schema.type;
  }
  for (const [key, value] of Object.entries(schema)) if (!DATA_KEYWORDS.has(key)) splitTypeArrays(value);
}

/**
 * The JSON Schema of a tool's arguments (`input`) or structured result (`output`), for tools/list:
 * inline, no `$schema` (MCP's default dialect is 2020-12, and clients validating results with a
 * draft-07 validator, such as the MCP SDK's, reject an unknown `$schema`), no bare `{}` (values zod
 * types as unknown are declared as any JSON value) and one type per (sub)schema.
 */
export function toolJsonSchema(schema: z.ZodObject, io: 'input' | 'output'): { type: 'object'; [key: string]: unknown } {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, {
    io,
    target: 'draft-2020-12',
    metadata,
    unrepresentable: 'throw',
    override: ({ zodSchema, jsonSchema }) => {
      const type = zodSchema._zod.def.type;
      if (type === 'unknown' || type === 'any') jsonSchema.anyOf = ANY_JSON;
    },
  });
  splitTypeArrays(json);
  return json as { type: 'object' };
}
