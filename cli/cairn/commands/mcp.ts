import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { API_DOCUMENT_VERSION } from '../../../api/plugins/openapi.ts';
import { API_KEY_PREFIX } from '../../../shared/auth/tokens.ts';
import { createMcpProxy } from '../mcp-proxy.ts';
import { CliUsageError, type CairnCommand } from '../registry.ts';

export const DEFAULT_BASE_URL = 'http://127.0.0.1:8080';

/** The hosted endpoint under the API: {CAIRN_BASE_URL}/mcp, or CAIRN_MCP_URL when given. */
export function mcpSettings(env: NodeJS.ProcessEnv): { mcpUrl: string; apiKey: string } {
  const apiKey = env.CAIRN_API_KEY?.trim();
  if (!apiKey) throw new CliUsageError('CAIRN_API_KEY is not set: create an API key (scopes memory.read, memory.write, query) and put it there.');
  if (!apiKey.startsWith(API_KEY_PREFIX)) throw new CliUsageError(`CAIRN_API_KEY does not look like an API key (${API_KEY_PREFIX}...).`);
  const base = (env.CAIRN_BASE_URL?.trim() || DEFAULT_BASE_URL).replace(/\/$/, '');
  const mcpUrl = env.CAIRN_MCP_URL?.trim() || `${base}/mcp`;
  if (!URL.canParse(mcpUrl) || !/^https?:$/.test(new URL(mcpUrl).protocol)) throw new CliUsageError(`not an http(s) URL: ${mcpUrl}`);
  return { mcpUrl, apiKey };
}

/**
 * `cairn mcp`: the same tools as the hosted endpoint, over stdio, for MCP hosts that start a local
 * process. stdout carries the protocol; diagnostics go to stderr.
 */
export const mcpCommand: CairnCommand = {
  name: 'mcp',
  summary: 'Serve the Cairn MCP tools over stdio (env CAIRN_API_KEY, CAIRN_BASE_URL)',
  usage: 'cairn mcp',
  options: {},
  async run(_args, env) {
    const settings = mcpSettings(env);
    const proxy = await createMcpProxy({ ...settings, version: API_DOCUMENT_VERSION }).catch((err: unknown) => {
      throw new Error(`cannot reach the Cairn MCP endpoint at ${settings.mcpUrl}: ${(err as Error).message}`);
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
