import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

/**
 * An MCP server whose tools are the hosted endpoint's tools: tools/list and tools/call are forwarded
 * to {mcpUrl} over Streamable HTTP with the API key. The 14 tools, their schemas and descriptions and
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
    { capabilities: { tools: { listChanged: false } }, instructions: remote.getInstructions() },
  );
  server.setRequestHandler(ListToolsRequestSchema, (request) => remote.listTools(request.params));
  server.setRequestHandler(CallToolRequestSchema, (request) => remote.callTool(request.params));
  return {
    serve: (transport: Transport) => server.connect(transport),
    async close() {
      await server.close();
      await remote.close();
    },
  };
}
