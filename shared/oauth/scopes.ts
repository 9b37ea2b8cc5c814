/** The effective scopes a user can give a connected application (spec 5, MCP OAuth). */
export const CONNECTED_APP_SCOPES = ['memory.read', 'memory.write'] as const;
export type ConnectedAppScope = (typeof CONNECTED_APP_SCOPES)[number];
