import { CliFailure } from '../failure.ts';
import { CLI_VERSION } from '../http.ts';
import { bearerFor, CliUsageError, type CairnCommand } from '../registry.ts';

/**
 * `cairn mcp`: the same tools as the hosted endpoint, over stdio, for MCP hosts that start a local
 * process. stdout carries the protocol; diagnostics go to stderr. The endpoint is {base URL}/mcp, or
 * CAIRN_MCP_URL when given; the credential is an API key (flag, CAIRN_API_KEY or the config file).
 */
export const mcpCommand: CairnCommand = {
  name: 'mcp',
  summary: 'Serve the Cairn MCP tools over stdio (API key; CAIRN_MCP_URL overrides {base URL}/mcp)',
  usage: 'cairn mcp [--api-key KEY] [--base-url URL]',
  credential: 'apiKey',
  options: { 'base-url': { type: 'string' }, 'api-key': { type: 'string' } },
  async run({ settings, env }) {
    const apiKey = bearerFor('apiKey', settings)!;
    const mcpUrl = env.CAIRN_MCP_URL?.trim() || `${settings.baseUrl}/mcp`;
    if (!URL.canParse(mcpUrl) || !/^https?:$/.test(new URL(mcpUrl).protocol)) throw new CliUsageError(`not an http(s) URL: ${mcpUrl}`);
    // Loaded here: the MCP SDK is only needed by this command.
    const { StdioServerTransport } = await import('@modelcontextprotocol/sdk/server/stdio.js');
    const { createMcpProxy } = await import('../mcp-proxy.ts');
    const proxy = await createMcpProxy({ mcpUrl, apiKey, version: CLI_VERSION }).catch((err: unknown) => {
      throw new CliFailure('mcp_connect_failed', `cannot reach the Cairn MCP endpoint at ${mcpUrl}: ${(err as Error).message}`);
    });
    const transport = new StdioServerTransport();
    const closed = new Promise<void>((resolve) => {
      transport.onclose = () => resolve();
    });
    await proxy.serve(transport);
    process.stdin.on('end', () => void transport.close());
    await closed;
    await proxy.close();
  },
};
