import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CallToolRequestSchema,
  CompleteRequestSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SetLevelRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';

/**
 * An MCP server whose tools are the hosted endpoint's tools: tools, resources (when offered), prompts, completion and
 * logging/setLevel are forwarded to {mcpUrl} over Streamable HTTP with the API key. The 14 tools, their schemas and descriptions and
 * every rule (scopes, validation, rate limits) therefore exist once, in the service; this side only
 * changes the transport (stdio for local MCP hosts).
 */
export async function createMcpProxy(opts: { mcpUrl: string; apiKey: string; version: string }) {
  const remote = new Client({ name: 'cairn-cli', version: opts.version });
  await remote.connect(
    new StreamableHTTPClientTransport(new URL(opts.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${opts.apiKey}` } } }),
  );
  const server = new Server(
    { name: 'cairn', title: 'Cairn memory', version: opts.version },
    { capabilities: remote.getServerCapabilities() ?? { tools: { listChanged: false } }, instructions: remote.getInstructions() },
  );
  server.setRequestHandler(ListToolsRequestSchema, (request) => remote.listTools(request.params));
  server.setRequestHandler(CallToolRequestSchema, (request) => remote.callTool(request.params));
  // The same capabilities as the endpoint, so only what it declares is forwarded.
  const offers = remote.getServerCapabilities() ?? {};
  if (offers.resources) {
    server.setRequestHandler(ListResourcesRequestSchema, (request) => remote.listResources(request.params));
    server.setRequestHandler(ListResourceTemplatesRequestSchema, (request) => remote.listResourceTemplates(request.params));
    server.setRequestHandler(ReadResourceRequestSchema, (request) => remote.readResource(request.params));
  }
  if (offers.prompts) {
    server.setRequestHandler(ListPromptsRequestSchema, (request) => remote.listPrompts(request.params));
    server.setRequestHandler(GetPromptRequestSchema, (request) => remote.getPrompt(request.params));
  }
  if (offers.completions) server.setRequestHandler(CompleteRequestSchema, (request) => remote.complete(request.params));
  if (offers.logging) server.setRequestHandler(SetLevelRequestSchema, (request) => remote.setLoggingLevel(request.params.level));
  return {
    serve: (transport: Transport) => server.connect(transport),
    async close() {
      await server.close();
      await remote.close();
    },
  };
}
